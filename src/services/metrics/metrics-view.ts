// How stored metrics are shown.
import type { DeploymentMetricsRow } from "../../../db/queries/metrics.ts";
import type { DeploymentMetrics } from "../../domain/metrics.ts";

export function toDeploymentMetrics(row: DeploymentMetricsRow): DeploymentMetrics {
  return {
    deploymentId: row.deploymentId,
    observedAt: row.observedAt.toISOString(),
    receivedAt: row.receivedAt.toISOString(),
    roles: row.roles as DeploymentMetrics["roles"],
  };
}
