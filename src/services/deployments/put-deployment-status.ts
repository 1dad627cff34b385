// PUT /status: the agent's write. Only an agent credential of the deployment's cluster
// may write; it needs no If-Match (the agent is the only writer) and never bumps
// generation.
import { findDeploymentById, lockDeployment, updateDeployment } from "../../../db/queries/deployments.ts";
import type { Deployment } from "../../domain/deployment.ts";
import { DeploymentStatus } from "../../domain/deployment-spec.ts";
import { NotFound } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { PHASE_EVENTS } from "../../domain/events.ts";
import { recordEvent, summarize } from "../events/record-event.ts";
import { toDeployment } from "./deployment-view.ts";

export async function putDeploymentStatus({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { id: string; status: DeploymentStatus };
}): Promise<Deployment> {
  const agent = requireAgent(ctx.principal);
  const notFound = new NotFound(`No deployment "${input.id}" in this agent's cluster.`);
  if (!isId("deployment", input.id) || !(await findDeploymentById(ctx.db, input.id))) throw notFound;
  const row = await ctx.db.transaction(async (tx) => {
    const current = await lockDeployment(tx, input.id);
    if (!current) throw notFound;
    if (current.clusterId !== agent.clusterId) throw notFound;
    // A deletion the user asked for stays visible until the agent confirms removal.
    const status = current.deletionRequestedAt ? { ...input.status, phase: "Deleting" as const } : input.status;
    const now = ctx.clock.now();
    const updated = (await updateDeployment(tx, current.id, { status, phase: status.phase }, now))!;
    // Status writes are frequent; only entering Ready, Degraded or Failed is an event.
    const phaseEvent = status.phase !== current.phase ? PHASE_EVENTS[status.phase] : undefined;
    if (phaseEvent) {
      await recordEvent(tx, now, {
        type: phaseEvent,
        projectId: updated.projectId,
        deploymentId: updated.id,
        data: { deployment: summarize(updated), previousPhase: current.phase, ...(status.message ? { message: status.message } : {}) },
      });
    }
    return updated;
  });
  return toDeployment(row);
}
