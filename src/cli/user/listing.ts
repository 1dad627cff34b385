// One page of a list (the API's body, for -o json) or, with --all, every page.
import { unwrap, type ListItem, type ListPath } from "../../../clients/typescript/src/index.ts";
import { usageError, type Session } from "./session.ts";

export const LIST_OPTIONS = {
  limit: { type: "string" },
  cursor: { type: "string" },
  all: { type: "boolean" },
} as const;

export const LIST_HELP = `  --limit N       page size          --cursor C   the page after C
  --all           every page, printed as { items, nextCursor: null }`;

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export async function fetchList<P extends ListPath>(
  session: Session,
  path: P,
  values: { limit?: string; cursor?: string; all?: boolean },
  usage: string,
  query: Record<string, unknown> = {},
  pathParams?: Record<string, string>,
): Promise<Page<ListItem<P>>> {
  if (values.limit !== undefined && !/^\d+$/.test(values.limit)) throw usageError(`--limit must be a number (got "${values.limit}")`, usage);
  if (values.all && values.cursor !== undefined) throw usageError("--all and --cursor do not go together", usage);
  const fullQuery = {
    ...query,
    ...(values.limit === undefined ? {} : { limit: Number(values.limit) }),
    ...(values.cursor === undefined ? {} : { cursor: values.cursor }),
  };
  const params = { query: fullQuery, ...(pathParams ? { path: pathParams } : {}) };
  if (values.all) {
    const items: ListItem<P>[] = [];
    for await (const item of session.client.paginate(path, { params } as never)) items.push(item);
    return { items, nextCursor: null };
  }
  // One generic call for every list path; each path's own parameters are checked by the API.
  const get = session.client.GET as unknown as (path: string, init: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
  return (await unwrap(get(path, { params }))) as Page<ListItem<P>>;
}

/** After a table: where the next page starts. */
export function hintMore(page: Page<unknown>, command: string): void {
  if (page.nextCursor !== null) process.stderr.write(`more: ${command} --cursor ${page.nextCursor} (or --all)\n`);
}
