// berth list: a page of deployments (or every page with --all), filtered like the API.
import { unwrap, type Deployment } from "../../../clients/typescript/src/index.ts";
import { DEPLOYMENT_COLUMNS, deploymentRow, renderTable } from "../user/format.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth list [deployments] [--phase PHASE] [--label K=V…] [--limit N] [--cursor C | --all]
                  [--project ID] [-o table|json|yaml]

Without --all, one page (the API's default size unless --limit); -o json prints
that page's body; with --all every page, as { items, nextCursor: null }.

${COMMON_HELP}`;

const PHASES = ["Pending", "Starting", "Ready", "Degraded", "Deleting", "Failed"] as const;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(
    args,
    {
      phase: { type: "string" },
      label: { type: "string", multiple: true },
      limit: { type: "string" },
      cursor: { type: "string" },
      all: { type: "boolean" },
    },
    USAGE,
  );
  if (positionals.length > 1 || (positionals.length === 1 && !["deployments", "deployment", "deploy", "dep"].includes(positionals[0]!))) {
    throw usageError(`list takes no argument but an optional "deployments" (got "${positionals.join(" ")}")`, USAGE);
  }
  if (values.limit !== undefined && !/^\d+$/.test(values.limit)) throw usageError(`--limit must be a number (got "${values.limit}")`, USAGE);
  if (values.all && values.cursor !== undefined) throw usageError("--all and --cursor do not go together", USAGE);
  const session = openSession(values);
  const query = {
    ...(values.limit === undefined ? {} : { limit: Number(values.limit) }),
    ...(values.cursor === undefined ? {} : { cursor: values.cursor }),
    // The API names the allowed phases in its problem if this is not one.
    ...(values.phase === undefined ? {} : { phase: values.phase as (typeof PHASES)[number] }),
    ...(values.label === undefined ? {} : { label: values.label }),
    ...(session.project === undefined ? {} : { projectId: session.project }),
  };
  let page: { items: Deployment[]; nextCursor: string | null };
  if (values.all) {
    const items: Deployment[] = [];
    for await (const deployment of session.client.paginate("/v1/deployments", { params: { query } })) items.push(deployment);
    page = { items, nextCursor: null };
  } else {
    // The route also answers text/event-stream (watch=true), which this call never asks for.
    page = (await unwrap(session.client.GET("/v1/deployments", { params: { query } }))) as typeof page;
  }
  if (session.output !== "table") return session.printBody(page);
  process.stdout.write(renderTable(DEPLOYMENT_COLUMNS, page.items.map(deploymentRow)));
  if (page.nextCursor !== null) process.stderr.write(`more: berth list --cursor ${page.nextCursor} (or --all)\n`);
}
