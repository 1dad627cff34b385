// POST /v1/agent/events: what happened in the cluster (a replica retiring, a resize)
// enters the same event log, and so the same streams and webhooks, as API-side changes.
import { findDeploymentById } from "../../../db/queries/deployments.ts";
import type { AgentEvent } from "../../domain/cluster.ts";
import { AgentScaledData } from "../../domain/cluster.ts";
import { zodIssuesToFieldErrors, type DeploymentSpec } from "../../domain/deployment-spec.ts";
import { InvalidRequest, InvalidSpec, NotFound, PayloadTooLarge } from "../../domain/errors.ts";
import { checkEventData, EVENT_DATA_LIMITS } from "../../domain/event-data.ts";
import { isId } from "../../domain/ids.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { recordEvent, summarize } from "../events/record-event.ts";

export async function recordAgentEvent({ ctx, input }: { ctx: ServiceContext; input: AgentEvent }): Promise<void> {
  const agent = requireAgent(ctx.principal);
  checkData(input.data);
  const row = isId("deployment", input.deploymentId) ? await findDeploymentById(ctx.db, input.deploymentId) : undefined;
  if (!row || row.clusterId !== agent.clusterId) {
    throw new NotFound(`No deployment "${input.deploymentId}" in this agent's cluster.`);
  }
  const data = input.type === "deployment.scaled" ? checkScaledData(input.data, row.spec as DeploymentSpec) : input.data;
  await ctx.db.transaction((tx) =>
    recordEvent(tx, ctx.clock.now(), {
      type: input.type,
      projectId: row.projectId,
      deploymentId: row.id,
      data: { ...data, deployment: summarize(row), actor: { kind: "agent", keyId: agent.credentialId } },
    }),
  );
}

/** `data` fans out to every matching webhook: bounded before anything is looked up or written. */
function checkData(data: unknown): void {
  const verdict = checkEventData(data);
  if (verdict.ok) return;
  if (verdict.tooLarge) {
    throw new PayloadTooLarge(`The event's data is ${verdict.bytes} bytes as JSON; at most ${EVENT_DATA_LIMITS.bytes} bytes are accepted.`, {
      limit: EVENT_DATA_LIMITS.bytes,
      errors: [verdict.error],
    });
  }
  throw new InvalidRequest("The event's data is not valid.", verdict.errors);
}

/** A posted deployment.scaled is a shadow recommendation for one of the deployment's roles. */
function checkScaledData(raw: Record<string, unknown>, spec: DeploymentSpec): AgentScaledData {
  const parsed = AgentScaledData.safeParse(raw);
  if (!parsed.success) throw new InvalidRequest("The deployment.scaled data is not valid.", zodIssuesToFieldErrors(parsed.error.issues, "/data"));
  const errors = [];
  if (parsed.data.mode === "active") {
    errors.push({
      pointer: "/data/mode",
      message: "an applied change is recorded by the autoscaler's replicas PATCH itself (deployment.scaled, mode active); post only shadow recommendations",
    });
  }
  const roles = spec.roles.map((role) => role.name);
  if (!roles.includes(parsed.data.role)) {
    errors.push({ pointer: "/data/role", message: `no role "${parsed.data.role}" in this deployment; its roles are ${roles.join(", ")}` });
  }
  if (errors.length > 0) throw new InvalidSpec("The deployment.scaled event was refused.", errors);
  return parsed.data;
}
