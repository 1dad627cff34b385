// Rows to API shapes, and the plan to a stored status.
import type { DeploymentRequestRow } from "../../../db/queries/deployment-requests.ts";
import type { DeploymentRequest, DeploymentRequestResource, DeploymentRequestStatus } from "../../domain/deployment-request.ts";
import type { DeploymentRequestSummary } from "../../domain/events.ts";
import type { Plan } from "../../domain/planner.ts";

export function toDeploymentRequest(row: DeploymentRequestRow): DeploymentRequestResource {
  return {
    id: row.id,
    name: row.name,
    projectId: row.projectId,
    spec: row.spec as DeploymentRequest,
    status: liveStatus(row),
    resourceVersion: row.resourceVersion,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * The stored status, unless the deployment it names was deleted since (the foreign key cleared
 * the link): then the request is Ready again, and apply creates the deployment anew.
 */
function liveStatus(row: DeploymentRequestRow): DeploymentRequestStatus {
  const status = row.status as DeploymentRequestStatus;
  if (status.deploymentId === undefined || row.deploymentId !== null) return status;
  const { deploymentId: _gone, selected: _unselected, ...rest } = status;
  return { ...rest, phase: "Ready" };
}

export function etagOfDeploymentRequest(resourceVersion: number): string {
  return `"${resourceVersion}"`;
}

export function statusOfPlan(plan: Plan, plannedAt: Date): DeploymentRequestStatus {
  return {
    phase: plan.phase,
    ...(plan.reason !== undefined && { reason: plan.reason }),
    model: plan.model,
    candidates: plan.candidates,
    moreCandidates: plan.moreCandidates,
    rejected: plan.rejected,
    ...(plan.closest && { closest: plan.closest }),
    baseline: plan.baseline,
    searched: plan.searched,
    plannedAt: plannedAt.toISOString(),
  };
}

export function summarizeRequest(row: DeploymentRequestRow): DeploymentRequestSummary {
  return { id: row.id, name: row.name, projectId: row.projectId, phase: row.phase, resourceVersion: row.resourceVersion };
}
