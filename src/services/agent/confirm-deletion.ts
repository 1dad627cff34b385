// DELETE /v1/agent/deployments/{id}: the agent has removed every object of a deployment
// the user deleted; the record goes, a tombstone stays for `desired`, and
// deployment.deleted is announced — all in one transaction.
import { deleteDeployment, lockDeployment } from "../../../db/queries/deployments.ts";
import { Conflict, NotFound } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { recordEvent, summarize } from "../events/record-event.ts";

export async function confirmDeletion({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<void> {
  const agent = requireAgent(ctx.principal);
  const notFound = () => new NotFound(`No deployment "${input.id}" in this agent's cluster.`);
  if (!isId("deployment", input.id)) throw notFound();
  await ctx.db.transaction(async (tx) => {
    const current = await lockDeployment(tx, input.id);
    if (!current || current.clusterId !== agent.clusterId) throw notFound();
    if (!current.deletionRequestedAt) {
      throw new Conflict(`Deployment "${current.name}" is not being deleted; only a user's DELETE starts that.`);
    }
    const now = ctx.clock.now();
    await deleteDeployment(tx, current.id, now);
    await recordEvent(tx, now, {
      type: "deployment.deleted",
      projectId: current.projectId,
      deploymentId: current.id,
      data: { deployment: summarize(current), actor: { kind: "agent", keyId: agent.credentialId } },
    });
  });
}
