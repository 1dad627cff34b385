// POST /v1/agent/events: what happened in the cluster (a replica retiring, a resize)
// enters the same event log, and so the same streams and webhooks, as API-side changes.
import { findDeploymentById } from "../../../db/queries/deployments.ts";
import type { AgentEvent } from "../../domain/cluster.ts";
import { NotFound } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { recordEvent, summarize } from "../events/record-event.ts";

export async function recordAgentEvent({ ctx, input }: { ctx: ServiceContext; input: AgentEvent }): Promise<void> {
  const agent = requireAgent(ctx.principal);
  const row = isId("deployment", input.deploymentId) ? await findDeploymentById(ctx.db, input.deploymentId) : undefined;
  if (!row || row.clusterId !== agent.clusterId) {
    throw new NotFound(`No deployment "${input.deploymentId}" in this agent's cluster.`);
  }
  await ctx.db.transaction((tx) =>
    recordEvent(tx, ctx.clock.now(), {
      type: input.type,
      projectId: row.projectId,
      deploymentId: row.id,
      data: { ...input.data, deployment: summarize(row), actor: { kind: "agent", keyId: agent.credentialId } },
    }),
  );
}
