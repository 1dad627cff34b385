// POST /v1/agent/operations: the agent records an operation before it acts (intent first),
// on a deployment of its own cluster. At most one Pending or Running operation of a kind
// per (deployment, role, replica): a second is a 409 naming the first (existingOperationId),
// so a restarted agent adopts what it had started instead of starting it twice.
import { lockDeployment } from "../../../db/queries/deployments.ts";
import { findActiveOperation, insertOperation } from "../../../db/queries/operations.ts";
import type { DeploymentSpec } from "../../domain/deployment-spec.ts";
import { Conflict, InvalidSpec, NotFound } from "../../domain/errors.ts";
import { isId, newId } from "../../domain/ids.ts";
import type { AgentOperationCreate, Operation } from "../../domain/operations.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toOperation } from "./operation-view.ts";
import { recordOperationEvents } from "./record-operation-events.ts";

export async function createAgentOperation({ ctx, input }: { ctx: ServiceContext; input: AgentOperationCreate }): Promise<Operation> {
  const agent = requireAgent(ctx.principal);
  const notFound = () => new NotFound(`No deployment "${input.deploymentId}" in this agent's cluster.`);
  if (!isId("deployment", input.deploymentId)) throw notFound();
  const row = await ctx.db.transaction(async (tx) => {
    const deployment = await lockDeployment(tx, input.deploymentId);
    if (!deployment || deployment.clusterId !== agent.clusterId) throw notFound();
    const roles = (deployment.spec as DeploymentSpec).roles.map((role) => role.name);
    if (!roles.includes(input.role)) {
      throw new InvalidSpec("The operation names a role the deployment does not have.", [
        { pointer: "/role", message: `no role "${input.role}" in deployment "${deployment.name}"; its roles are ${roles.join(", ")}` },
      ]);
    }
    const target = { deploymentId: deployment.id, kind: input.kind, role: input.role, replica: input.replica ?? null };
    const active = await findActiveOperation(tx, target);
    if (active) throw activeConflict(active.id, active.phase, input);
    const now = ctx.clock.now();
    const step = { name: input.step, startedAt: now.toISOString() };
    const created = await insertOperation(tx, {
      id: newId("operation"),
      ...target,
      projectId: deployment.projectId,
      phase: input.phase ?? "Pending",
      step: input.step,
      params: input.params ?? null,
      steps: [step],
      message: input.message ?? "",
      progress: null,
      result: null,
      error: null,
      startedAt: now,
      finishedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    // Lost a race with a concurrent create: the other one is the operation to adopt.
    if (!created) {
      const winner = await findActiveOperation(tx, target);
      throw activeConflict(winner?.id ?? "unknown", winner?.phase ?? "Pending", input);
    }
    await recordOperationEvents(tx, now, { before: null, after: created, deployment, actor: { kind: "agent", keyId: agent.credentialId } });
    return created;
  });
  return toOperation(row);
}

function activeConflict(id: string, phase: string, input: AgentOperationCreate): Conflict {
  const target = `role "${input.role}"${input.replica === undefined ? "" : ` replica ${input.replica}`}`;
  return new Conflict(
    `A ${input.kind} operation of ${target} is already ${phase} (${id}); adopt it (GET /v1/operations/${id}) instead of starting another.`,
    { existingOperationId: id },
  );
}
