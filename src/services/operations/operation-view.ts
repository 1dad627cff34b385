// How a stored operation is shown to clients and summarised in events.
import type { OperationRow } from "../../../db/queries/operations.ts";
import type { OperationSummary } from "../../domain/events.ts";
import type { Operation, OperationKind, OperationPhase } from "../../domain/operations.ts";

export function toOperation(row: OperationRow): Operation {
  return {
    id: row.id,
    kind: row.kind as OperationKind,
    deploymentId: row.deploymentId,
    projectId: row.projectId,
    role: row.role,
    ...(row.replica !== null && { replica: row.replica }),
    phase: row.phase as OperationPhase,
    step: row.step,
    ...(row.params !== null && { params: row.params as Record<string, unknown> }),
    steps: row.steps as Operation["steps"],
    message: row.message,
    ...(row.progress !== null && { progress: row.progress as Operation["progress"] }),
    startedAt: row.startedAt.toISOString(),
    ...(row.finishedAt !== null && { finishedAt: row.finishedAt.toISOString() }),
    ...(row.result !== null && { result: row.result as Record<string, unknown> }),
    ...(row.error !== null && { error: row.error as Operation["error"] }),
    resourceVersion: row.resourceVersion,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function summarizeOperation(row: OperationRow): OperationSummary {
  return {
    id: row.id,
    kind: row.kind as OperationKind,
    deploymentId: row.deploymentId,
    role: row.role,
    ...(row.replica !== null && { replica: row.replica }),
    phase: row.phase,
    step: row.step,
  };
}

export function etagOfOperation(resourceVersion: number): string {
  return `"${resourceVersion}"`;
}
