import { listApiKeys as selectApiKeys } from "../../../db/queries/api-keys.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ApiKey } from "../../domain/resources.ts";
import type { ServiceContext } from "../context.ts";
import { toApiKey } from "./api-key-view.ts";

/** Admins list keys: a project admin sees its project's keys, an installation admin every key. */
export async function listApiKeys({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { limit: number; cursor?: string };
}): Promise<{ items: ApiKey[]; nextCursor: string | null }> {
  const user = requireUser(ctx.principal, "admin");
  const rows = await selectApiKeys(ctx.db, {
    cursor: decodeCursor(input.cursor),
    limit: input.limit + 1,
    projectId: user.projectId ?? undefined,
  });
  return pageOf(rows, input.limit, toApiKey);
}
