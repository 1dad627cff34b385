// Creates a deployment request: plans it at once (the planner is pure and takes milliseconds, so
// the request is stored already Ready or Failed), records request.ready or request.failed with
// it, and with autoApply creates the first candidate's deployment straight away.
import { findClusterById } from "../../../db/queries/clusters.ts";
import { insertDeploymentRequest } from "../../../db/queries/deployment-requests.ts";
import type { Inventory } from "../../domain/cluster.ts";
import type { DeploymentRequest } from "../../domain/deployment-request.ts";
import { Conflict, InvalidSpec } from "../../domain/errors.ts";
import { newId } from "../../domain/ids.ts";
import { planDeploymentRequest, type PlanInventory } from "../../domain/planner.ts";
import { requireUser } from "../../domain/principal.ts";
import { resolveTargetProject } from "../projects/resolve-target-project.ts";
import type { ServiceContext } from "../context.ts";
import { actorOf, recordEvent } from "../events/record-event.ts";
import { applyDeploymentRequest, type AppliedRequest } from "./apply-deployment-request.ts";
import { statusOfPlan, summarizeRequest, toDeploymentRequest } from "./deployment-request-view.ts";

export async function createDeploymentRequest({ ctx, input }: { ctx: ServiceContext; input: DeploymentRequest }): Promise<AppliedRequest> {
  const user = requireUser(ctx.principal, "editor");
  const projectId = await resolveTargetProject(ctx, user, input.projectId, "request");
  const inventory = await inventoryOf(ctx, input.hardware.clusterId);
  const plan = planDeploymentRequest(input, inventory ? { inventory } : {});
  const now = ctx.clock.now();
  const spec: DeploymentRequest = { ...input, projectId };
  const row = await ctx.db.transaction(async (tx) => {
    const created = await insertDeploymentRequest(tx, {
      id: newId("request"),
      projectId,
      name: input.name,
      spec,
      status: statusOfPlan(plan, now),
      phase: plan.phase,
      deploymentId: null,
      createdAt: now,
      updatedAt: now,
    });
    if (!created) return undefined;
    const actor = actorOf(ctx.principal);
    await recordEvent(tx, now, {
      type: plan.phase === "Ready" ? "request.ready" : "request.failed",
      projectId,
      data:
        plan.phase === "Ready"
          ? { request: summarizeRequest(created), candidates: plan.candidates.length + plan.moreCandidates, best: { gpus: plan.candidates[0]!.gpus, why: plan.candidates[0]!.why }, actor }
          : { request: summarizeRequest(created), reason: plan.reason!, ...(plan.closest && { closest: { shortfall: plan.closest.shortfall } }), actor },
    });
    return created;
  });
  if (!row) throw new Conflict(`A deployment request named "${input.name}" already exists in this project; choose another name or delete it.`);
  if (input.autoApply && row.phase === "Ready") return applyDeploymentRequest({ ctx, input: { id: row.id } });
  return { request: toDeploymentRequest(row), warnings: [] };
}

/** The free GPUs of the named cluster, from its last heartbeat; none reported yet → plan without. */
async function inventoryOf(ctx: ServiceContext, clusterId: string | undefined): Promise<PlanInventory | undefined> {
  if (clusterId === undefined) return undefined;
  const cluster = await findClusterById(ctx.db, clusterId);
  if (!cluster) {
    throw new InvalidSpec("The request names a cluster that does not exist.", [
      { pointer: "/hardware/clusterId", message: `no cluster with id "${clusterId}"; list clusters with GET /v1/clusters` },
    ]);
  }
  const reported = cluster.inventory as Inventory | null;
  if (!reported) return undefined;
  return { nodes: reported.nodes.flatMap((n) => (n.gpuType ? [{ name: n.name, gpuType: n.gpuType, gpuFree: n.gpuFree }] : [])) };
}
