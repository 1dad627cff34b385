// Watching deployments (GET /v1/deployments?watch=true): Kubernetes-style ADDED,
// MODIFIED and DELETED notices ordered by resourceVersion. Without a starting version a
// watch begins with every current deployment as ADDED, read page by page (a bounded number
// of rows per query, no long transaction) and all carrying the version taken before the
// first page; changes follow from that version. Watches are level-triggered: each notice
// carries the latest state, so changes made between two polls arrive as one notice (a
// deployment created and deleted in between shows only as DELETED); a deletion is never
// missed. A deployment changed while the pages are read is sent with its latest state and
// again as MODIFIED; one created meanwhile is left to the changes (ADDED once); one deleted
// before its page comes only as DELETED.
import { CHANGES_CHANNEL } from "../../../db/queries/change-log.ts";
import { latestChangeVersion, listDeploymentChanges, listDeployments, type DeploymentChange } from "../../../db/queries/deployments.ts";
import type { PageCursor } from "../../../db/queries/pagination.ts";
import type { Deployment } from "../../domain/deployment.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { assertCursorKept } from "../retention/kept-cursor.ts";
import { toDeployment } from "./deployment-view.ts";

export type WatchNotice =
  | { type: "ADDED" | "MODIFIED"; resourceVersion: number; object: Deployment }
  | { type: "DELETED"; resourceVersion: number; object: { id: string; name: string; projectId: string; resourceVersion: number } };

/** Announces each committed deployment write; a watch wakes on it. */
export const WATCH_CHANNEL = CHANGES_CHANNEL;

function scope(ctx: ServiceContext, projectId: string | undefined): string | undefined {
  const user = requireUser(ctx.principal);
  return user.projectId ?? projectId;
}

/** Where a snapshot stands: its version, and the last deployment sent (undefined before the first page). */
export interface SnapshotPosition {
  resourceVersion: number;
  after?: PageCursor;
}

/** The version a snapshot is taken at: every change up to it is committed (change-log order). */
export async function startWatchSnapshot({ ctx }: { ctx: ServiceContext }): Promise<SnapshotPosition> {
  requireUser(ctx.principal);
  return { resourceVersion: await latestChangeVersion(ctx.db) };
}

/**
 * The next page of the snapshot: at most `limit` ADDED notices (one query per `limit` rows read),
 * and where the snapshot stands after it; `next` is undefined once every deployment was read.
 */
export async function snapshotPage({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { position: SnapshotPosition; limit: number; projectId?: string };
}): Promise<{ notices: WatchNotice[]; next?: SnapshotPosition }> {
  const { resourceVersion } = input.position;
  let after = input.position.after;
  // Pages whose rows were all created after the snapshot send nothing; read on (bounded by the table).
  for (;;) {
    const rows = await listDeployments(ctx.db, { projectId: scope(ctx, input.projectId), cursor: after, limit: input.limit });
    const last = rows[rows.length - 1];
    const next = rows.length === input.limit && last ? { resourceVersion, after: { createdAt: last.createdAt, id: last.id } } : undefined;
    const notices: WatchNotice[] = rows
      .filter((row) => row.createdVersion <= resourceVersion)
      .map((row) => ({ type: "ADDED", resourceVersion, object: toDeployment(row) }));
    if (notices.length > 0 || !next) return { notices, ...(next && { next }) };
    after = next.after;
  }
}

/** 410 when deletions after `resourceVersion` may have been purged (docs/design.md §14.5). */
export async function assertWatchCursorKept({ ctx, resourceVersion }: { ctx: ServiceContext; resourceVersion: number }): Promise<void> {
  await assertCursorKept(
    ctx.db,
    "deployment_tombstones",
    resourceVersion,
    (purgedThrough) =>
      `Deletions after resourceVersion ${resourceVersion} are no longer all kept: retention purged deleted deployments through ` +
      `resourceVersion ${purgedThrough}. Watch again without resourceVersion and without Last-Event-ID: ` +
      `every current deployment comes first as ADDED, then the changes.`,
  );
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
  // After the read: a purge that raced it has raised the horizon by now.
  await assertWatchCursorKept({ ctx, resourceVersion: input.after });
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
