// PATCH /v1/agent/operations/{id}: the agent moves its operation on (a merge patch). Phases
// only move forward (OPERATION_TRANSITIONS) and terminal ones are final (409 either way);
// the server keeps `steps` (closing the open step when `step` changes, unless the agent sends
// steps itself), sets finishedAt on entering a terminal phase, and writes the phase's events
// in the same transaction.
import { findDeploymentById } from "../../../db/queries/deployments.ts";
import { lockOperation, updateOperation, type OperationChanges } from "../../../db/queries/operations.ts";
import { Conflict, NotFound } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import {
  isTerminalPhase,
  OPERATION_TRANSITIONS,
  type AgentOperationPatch,
  type Operation,
  type OperationPhase,
  type OperationStep,
} from "../../domain/operations.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toOperation } from "./operation-view.ts";
import { recordOperationEvents } from "./record-operation-events.ts";

export async function patchAgentOperation({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { id: string; patch: AgentOperationPatch };
}): Promise<Operation> {
  const agent = requireAgent(ctx.principal);
  const notFound = () => new NotFound(`No operation "${input.id}" in this agent's cluster.`);
  if (!isId("operation", input.id)) throw notFound();
  const row = await ctx.db.transaction(async (tx) => {
    const locked = await lockOperation(tx, input.id);
    if (!locked || locked.clusterId !== agent.clusterId) throw notFound();
    const current = locked.row;
    const from = current.phase as OperationPhase;
    if (isTerminalPhase(from)) {
      throw new Conflict(`Operation "${current.id}" is ${from}; terminal phases are final. Record new work as a new operation.`, {
        phase: from,
      });
    }
    const phase = input.patch.phase ?? from;
    const allowed = OPERATION_TRANSITIONS[from];
    if (!allowed.includes(phase)) {
      throw new Conflict(`Operation "${current.id}" cannot go from ${from} to ${phase}; it may go to ${allowed.join(", ")}.`, {
        phase: from,
        allowedPhases: allowed,
      });
    }
    const now = ctx.clock.now();
    const terminal = isTerminalPhase(phase);
    const step = input.patch.step ?? current.step;
    const changes: OperationChanges = {
      phase,
      step,
      steps: input.patch.steps ?? nextSteps(current.steps as OperationStep[], current.step, step, terminal, now),
      finishedAt: terminal ? now : null,
    };
    if (input.patch.message !== undefined) changes.message = input.patch.message;
    if (input.patch.progress !== undefined) changes.progress = input.patch.progress;
    if (input.patch.result !== undefined) changes.result = input.patch.result;
    if (input.patch.error !== undefined) changes.error = input.patch.error;
    const updated = (await updateOperation(tx, current.id, changes, now))!;
    if (updated.phase !== from) {
      const deployment = (await findDeploymentById(tx, updated.deploymentId))!;
      await recordOperationEvents(tx, now, { before: from, after: updated, deployment, actor: { kind: "agent", keyId: agent.credentialId } });
    }
    return updated;
  });
  return toOperation(row);
}

/** A new step closes the open one and opens itself; a terminal phase closes the open one. */
function nextSteps(steps: OperationStep[], previous: string, step: string, terminal: boolean, now: Date): OperationStep[] {
  const at = now.toISOString();
  const closed = (list: OperationStep[]) => list.map((s, i) => (i === list.length - 1 && !s.finishedAt ? { ...s, finishedAt: at } : s));
  let next = steps;
  if (step !== previous || steps.length === 0) next = [...closed(next), { name: step, startedAt: at }];
  if (terminal) next = closed(next);
  return next;
}
