// Addressing an endpoint: by id only. A project-bound key sees its project's endpoints;
// installation-wide endpoints and other projects' are "not found" to it. Reading takes a
// viewer key, managing an admin key (of the project, or installation-wide).
import type { Db } from "../../../db/client.ts";
import { findWebhookEndpoint, type WebhookEndpointRow } from "../../../db/queries/webhooks.ts";
import { NotFound, PreconditionFailed } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import { requireUser, type KeyRole, type UserPrincipal } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { etagOfWebhook } from "./webhook-view.ts";

export function canSeeWebhook(user: UserPrincipal, row: Pick<WebhookEndpointRow, "projectId">): boolean {
  return user.projectId === null || row.projectId === user.projectId;
}

export async function findVisibleWebhook(
  ctx: ServiceContext,
  id: string,
  role: KeyRole = "viewer",
  db: Db = ctx.db,
): Promise<WebhookEndpointRow> {
  const user = requireUser(ctx.principal, role);
  const row = isId("webhook", id) ? await findWebhookEndpoint(db, id) : undefined;
  if (!row || !canSeeWebhook(user, row)) throw new NotFound(`No webhook endpoint "${id}".`);
  return row;
}

export function checkWebhookIfMatch(row: WebhookEndpointRow, ifMatch: string | undefined): void {
  if (ifMatch === undefined) return;
  const current = etagOfWebhook(row.resourceVersion);
  const tags = ifMatch.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
  if (tags.includes("*") || tags.includes(current)) return;
  throw new PreconditionFailed(
    `The webhook endpoint changed since you read it (now ${current}); GET it again, reapply your change and retry.`,
    current,
  );
}
