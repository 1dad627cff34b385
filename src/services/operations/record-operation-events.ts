// The events of an operation's phase change, written in the caller's transaction (outbox):
// operation.started on entering Running (phases never go back, so that happens once),
// operation.succeeded, operation.failed for Failed and Aborted; a retirement also
// announces replica.retiring when it starts and replica.retired when it succeeds; a resize that
// succeeds announces deployment.resized with the old and new width.
import type { Db } from "../../../db/client.ts";
import type { DeploymentRow } from "../../../db/queries/deployments.ts";
import type { OperationRow } from "../../../db/queries/operations.ts";
import type { Actor } from "../../domain/events.ts";
import { recordEvent, summarize } from "../events/record-event.ts";
import { summarizeOperation } from "./operation-view.ts";

export async function recordOperationEvents(
  tx: Db,
  now: Date,
  change: { before: string | null; after: OperationRow; deployment: DeploymentRow; actor: Actor },
): Promise<void> {
  const { before, after, deployment, actor } = change;
  if (before === after.phase) return;
  const base = { projectId: after.projectId, deploymentId: after.deploymentId };
  const data = {
    operation: summarizeOperation(after),
    deployment: summarize(deployment),
    actor,
    ...(after.params !== null && { params: after.params as Record<string, unknown> }),
  };
  const replicaData = {
    deployment: summarize(deployment),
    role: after.role,
    ...(after.replica !== null && { replica: after.replica }),
    operationId: after.id,
    actor,
  };
  if (after.phase === "Running") {
    await recordEvent(tx, now, { ...base, type: "operation.started", data });
    if (after.kind === "retire") await recordEvent(tx, now, { ...base, type: "replica.retiring", data: replicaData });
  } else if (after.phase === "Succeeded") {
    if (after.kind === "retire") await recordEvent(tx, now, { ...base, type: "replica.retired", data: replicaData });
    if (after.kind === "resize") {
      const { fromWidth, toWidth } = (after.params ?? {}) as { fromWidth?: number; toWidth?: number };
      await recordEvent(tx, now, { ...base, type: "deployment.resized", data: { ...replicaData, fromWidth, toWidth } });
    }
    const result = after.result !== null ? { result: after.result as Record<string, unknown> } : {};
    await recordEvent(tx, now, { ...base, type: "operation.succeeded", data: { ...data, ...result } });
  } else if (after.phase === "Failed" || after.phase === "Aborted") {
    const error = after.error !== null ? { error: after.error as { reason: string; message: string } } : {};
    await recordEvent(tx, now, { ...base, type: "operation.failed", data: { ...data, phase: after.phase, ...error } });
  }
}
