// GET /v1/agent/desired: what the agent's cluster should run. The first call (since 0)
// returns every deployment of the cluster; later calls long-poll for changes after
// `since` — deployments and tombstones, in resourceVersion order — answering as soon as
// one commits (woken by the instance's NOTIFY on deployment writes, with a slow timer in
// case a notice is lost; polled every 250 ms where there is no NOTIFY) or empty when the
// wait ends. Level-triggered: each
// item is the latest state, never a diff. On a database that never held a deployment the
// snapshot's resourceVersion is 0, so since=0 long-polls too (changes after 0 are the
// whole snapshot); otherwise an agent there could only ask again at once, in a busy loop.
// A `since` older than the tombstones retention keeps is answered 410 (docs/design.md §14.5):
// deletions after it may be gone, so the agent asks again with since=0 and removes what is
// not in that full list.
import type { Db } from "../../../db/client.ts";
import { CHANGES_CHANNEL } from "../../../db/queries/change-log.ts";
import { listDeploymentChanges, snapshotDeployments } from "../../../db/queries/deployments.ts";
import { findProjectsByIds } from "../../../db/queries/projects.ts";
import type { DesiredState } from "../../domain/cluster.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toDeployment } from "../deployments/deployment-view.ts";
import { assertCursorKept } from "../retention/kept-cursor.ts";

const POLL_MS = 250;
const BATCH = 500;

export async function getDesiredState({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { since: number; waitSeconds: number; signal?: AbortSignal };
}): Promise<DesiredState> {
  const agent = requireAgent(ctx.principal);
  const snapshot = input.since === 0 ? await snapshotDeployments(ctx.db, { limit: 100_000, clusterId: agent.clusterId }) : undefined;
  if (snapshot && (snapshot.resourceVersion > 0 || input.waitSeconds === 0)) {
    const names = await projectNames(ctx.db, snapshot.rows.map((row) => row.projectId));
    return {
      resourceVersion: snapshot.resourceVersion,
      items: snapshot.rows.map((row) => ({
        deployment: toDeployment(row),
        projectName: names.get(row.projectId) ?? "",
        deleting: row.deletionRequestedAt !== null,
      })),
      deleted: [],
    };
  }
  const deadline = Date.now() + input.waitSeconds * 1000;
  const hub = ctx.notifications;
  const listening = (await hub?.start()) ?? false;
  for (;;) {
    const seen = hub?.count(CHANGES_CHANNEL) ?? 0;
    const changes = await listDeploymentChanges(ctx.db, {
      afterVersion: input.since,
      limit: BATCH,
      clusterId: agent.clusterId,
      includeDeletions: true,
    });
    // After the read: a purge that raced it has raised the horizon by now.
    await assertCursorKept(
      ctx.db,
      "deployment_tombstones",
      input.since,
      (purgedThrough) =>
        `Deletions after resourceVersion ${input.since} are no longer all kept: retention purged deleted deployments through ` +
        `resourceVersion ${purgedThrough}. Ask again with since=0 for the full desired state and remove what is not in it.`,
    );
    if (changes.length > 0 || Date.now() >= deadline || input.signal?.aborted) {
      const state: DesiredState = { resourceVersion: input.since, items: [], deleted: [] };
      const names = await projectNames(
        ctx.db,
        changes.flatMap((change) => (change.kind === "upsert" ? [change.row.projectId] : [])),
      );
      for (const change of changes) {
        state.resourceVersion = Math.max(state.resourceVersion, change.resourceVersion);
        if (change.kind === "upsert") {
          state.items.push({
            deployment: toDeployment(change.row),
            projectName: names.get(change.row.projectId) ?? "",
            deleting: change.row.deletionRequestedAt !== null,
          });
        } else {
          const { id, name, projectId, resourceVersion } = change.tombstone;
          state.deleted.push({ id, name, projectId, resourceVersion });
        }
      }
      return state;
    }
    const remaining = Math.max(0, deadline - Date.now());
    if (hub && listening) await hub.waitForChange(CHANGES_CHANNEL, seen, Math.min(ctx.config.streamFallbackMs, remaining), input.signal);
    else await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, remaining)));
  }
}

/** Project names for the namespaces (`berth-<project>`): the agent credential cannot read projects. */
async function projectNames(db: Db, ids: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Map();
  const rows = await findProjectsByIds(db, unique);
  return new Map(rows.map((row) => [row.id, row.name]));
}
