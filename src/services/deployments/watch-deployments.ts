// Watching deployments (GET /v1/deployments?watch=true): Kubernetes-style ADDED,
// MODIFIED and DELETED notices ordered by resourceVersion. Without a starting version a
// watch begins with every current deployment as ADDED, read in one snapshot. Watches are
// level-triggered: each notice carries the latest state, so changes made between two
// polls arrive as one notice (a deployment created and deleted in between shows only as
// DELETED); a deletion is never missed.
import { CHANGES_CHANNEL } from "../../../db/queries/change-log.ts";
import { listDeploymentChanges, snapshotDeployments, type DeploymentChange } from "../../../db/queries/deployments.ts";
import type { Deployment } from "../../domain/deployment.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toDeployment } from "./deployment-view.ts";

export type WatchNotice =
  | { type: "ADDED" | "MODIFIED"; resourceVersion: number; object: Deployment }
  | { type: "DELETED"; resourceVersion: number; object: { id: string; name: string; projectId: string; resourceVersion: number } };

/** Announces each committed deployment write; a watch wakes on it. */
export const WATCH_CHANNEL = CHANGES_CHANNEL;

/** The most a snapshot sends; a larger installation should page with the list route first. */
const SNAPSHOT_LIMIT = 10_000;

function scope(ctx: ServiceContext, projectId: string | undefined): string | undefined {
  const user = requireUser(ctx.principal);
  return user.projectId ?? projectId;
}

export async function snapshotForWatch({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { projectId?: string };
}): Promise<{ notices: WatchNotice[]; resourceVersion: number }> {
  const { rows, resourceVersion } = await snapshotDeployments(ctx.db, { limit: SNAPSHOT_LIMIT, projectId: scope(ctx, input.projectId) });
  return { notices: rows.map((row) => ({ type: "ADDED", resourceVersion, object: toDeployment(row) })), resourceVersion };
}

export async function pollDeploymentChanges({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { after: number; limit: number; projectId?: string };
}): Promise<WatchNotice[]> {
  const changes = await listDeploymentChanges(ctx.db, {
    afterVersion: input.after,
    limit: input.limit,
    projectId: scope(ctx, input.projectId),
    includeDeletions: true,
  });
  return changes.map((change) => toNotice(change, input.after));
}

function toNotice(change: DeploymentChange, after: number): WatchNotice {
  if (change.kind === "delete") {
    const { id, name, projectId, resourceVersion } = change.tombstone;
    return { type: "DELETED", resourceVersion, object: { id, name, projectId, resourceVersion } };
  }
  // Created after the point the watcher resumed from means new to it.
  const fresh = change.row.createdVersion > after;
  return { type: fresh ? "ADDED" : "MODIFIED", resourceVersion: change.resourceVersion, object: toDeployment(change.row) };
}
