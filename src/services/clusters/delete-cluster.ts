// DELETE /v1/clusters/{id}: removes a cluster and revokes its agent's credentials. A
// cluster that deployments are placed on (taken by its agent, or waiting for it by
// spec.clusterId) is refused with 409 naming them, unless `moveTo` names another cluster:
// then they are reassigned there in the same transaction (spec.clusterId follows), so the
// new cluster's agent receives them on its next desired-state read and creates them. The
// old agent is revoked in that transaction and hears nothing more: by design §1.3 it
// never deletes on losing contact, so what it ran keeps running until its operator
// uninstalls it (docs/design.md §14.4).
import { findClusterById, lockCluster, deleteClusterRow, revokeClusterCredentials } from "../../../db/queries/clusters.ts";
import { lockClusterDeployments, lockDeploymentsWaitingFor, updateDeployment, type DeploymentRow } from "../../../db/queries/deployments.ts";
import { announceRevocations } from "../../../db/queries/revocations.ts";
import { Conflict, InvalidRequest, NotFound } from "../../domain/errors.ts";
import { requireInstallationAdmin } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { actorOf, recordEvent } from "../events/record-event.ts";
import { forgetRevoked } from "./agent-credentials.ts";

/** How many deployments a refusal names; the rest are counted. */
export const NAMED_IN_CONFLICT = 20;

export async function deleteCluster({ ctx, input }: { ctx: ServiceContext; input: { id: string; moveTo?: string } }): Promise<void> {
  const user = requireInstallationAdmin(ctx.principal);
  if (input.moveTo === input.id) {
    throw new InvalidRequest("moveTo names the cluster being deleted.", [
      { parameter: "moveTo", message: "must be another cluster's id; list clusters with GET /v1/clusters" },
    ]);
  }
  const now = ctx.clock.now();
  const revoked = await ctx.db.transaction(async (tx) => {
    const cluster = await lockCluster(tx, input.id);
    if (!cluster) throw new NotFound(`No cluster with id "${input.id}"; list clusters with GET /v1/clusters.`);
    const placed = [...(await lockClusterDeployments(tx, input.id)), ...(await lockDeploymentsWaitingFor(tx, input.id))];
    if (placed.length > 0 && input.moveTo === undefined) throw placedConflict(cluster.name, placed);
    if (input.moveTo !== undefined) {
      const target = await findClusterById(tx, input.moveTo);
      if (!target) {
        throw new InvalidRequest(`No cluster with id "${input.moveTo}" to move the deployments to.`, [
          { parameter: "moveTo", message: "must name an existing cluster; list clusters with GET /v1/clusters" },
        ]);
      }
      for (const row of placed) await moveDeployment(tx, row, target.id, now);
    }
    const credentialIds = await revokeClusterCredentials(tx, cluster.id, now);
    await announceRevocations(tx, credentialIds);
    await deleteClusterRow(tx, cluster.id);
    await recordEvent(tx, now, {
      type: "cluster.deleted",
      projectId: null,
      data: {
        clusterId: cluster.id,
        name: cluster.name,
        actor: actorOf(user),
        movedTo: input.moveTo ?? null,
        movedDeploymentIds: placed.map((row) => row.id),
        revokedCredentials: credentialIds.length,
      },
    });
    return credentialIds;
  });
  forgetRevoked(ctx, revoked);
}

/** Placement only: the configuration (generation) is unchanged; spec.clusterId, when set, follows. */
async function moveDeployment(tx: ServiceContext["db"], row: DeploymentRow, targetId: string, now: Date): Promise<void> {
  const spec = row.spec as { clusterId?: string };
  const changes = spec.clusterId === undefined ? { clusterId: targetId } : { clusterId: targetId, spec: { ...spec, clusterId: targetId } };
  await updateDeployment(tx, row.id, changes, now);
}

function placedConflict(clusterName: string, placed: DeploymentRow[]): Conflict {
  const named = placed.slice(0, NAMED_IN_CONFLICT);
  const more = placed.length - named.length;
  const list = named.map((row) => `${row.name} (${row.id})`).join(", ") + (more > 0 ? ` and ${more} more` : "");
  return new Conflict(
    `Cluster "${clusterName}" has ${placed.length} deployment(s) placed on it: ${list}. ` +
      "Delete them first, or pass ?moveTo=<clusterId> to reassign them to another cluster in the same step.",
    { deployments: named.map((row) => ({ id: row.id, name: row.name, projectId: row.projectId })), moreDeployments: more },
  );
}
