// DELETE: a deployment whose cluster's agent has never connected is removed at once; one
// an agent may run moves to Deleting and is removed when the agent confirms every object
// is gone (DELETE /v1/agent/deployments/{id}).
import { findClusterById } from "../../../db/queries/clusters.ts";
import { deleteDeployment as removeDeployment, lockDeployment, updateDeployment } from "../../../db/queries/deployments.ts";
import type { Deployment } from "../../domain/deployment.ts";
import { NotFound } from "../../domain/errors.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { actorOf, recordEvent, summarize } from "../events/record-event.ts";
import { toDeployment } from "./deployment-view.ts";
import { checkIfMatch, findVisibleDeployment, type DeploymentAddress } from "./find-deployment.ts";

export type DeleteOutcome = { removed: true } | { removed: false; deployment: Deployment };

export async function deleteDeployment({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { address: DeploymentAddress; ifMatch?: string };
}): Promise<DeleteOutcome> {
  requireUser(ctx.principal, "editor");
  const found = await findVisibleDeployment(ctx, input.address);
  return ctx.db.transaction(async (tx): Promise<DeleteOutcome> => {
    const current = await lockDeployment(tx, found.id);
    if (!current) throw new NotFound(`No deployment "${input.address.idOrName}".`);
    checkIfMatch(current, input.ifMatch);
    const now = ctx.clock.now();
    const actor = actorOf(ctx.principal);
    // No agent has ever connected for it: nothing can exist in a cluster, so remove it now.
    const cluster = current.clusterId === null ? undefined : await findClusterById(tx, current.clusterId);
    if (!cluster?.lastHeartbeatAt) {
      await removeDeployment(tx, current.id, now);
      await recordEvent(tx, now, {
        type: "deployment.deleted",
        projectId: current.projectId,
        deploymentId: current.id,
        data: { deployment: summarize(current), actor },
      });
      return { removed: true };
    }
    if (current.deletionRequestedAt) return { removed: false, deployment: toDeployment(current) };
    const status = { ...(current.status as Record<string, unknown>), phase: "Deleting" };
    const row = (await updateDeployment(tx, current.id, { deletionRequestedAt: now, status, phase: "Deleting" }, now))!;
    await recordEvent(tx, now, {
      type: "deployment.updated",
      projectId: row.projectId,
      deploymentId: row.id,
      data: { deployment: summarize(row), actor, specChanged: false, labelsChanged: false, deletionRequested: true },
    });
    return { removed: false, deployment: toDeployment(row) };
  });
}
