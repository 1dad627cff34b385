// GET /v1/deployments/{id}/metrics: the latest signals the agent wrote; 404 until it wrote
// any (nothing is invented: no zeros for what was never observed).
import { findDeploymentMetrics } from "../../../db/queries/metrics.ts";
import { NotFound } from "../../domain/errors.ts";
import type { DeploymentMetrics } from "../../domain/metrics.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleDeployment, type DeploymentAddress } from "../deployments/find-deployment.ts";
import { toDeploymentMetrics } from "./metrics-view.ts";

export async function getDeploymentMetrics({ ctx, input }: { ctx: ServiceContext; input: DeploymentAddress }): Promise<DeploymentMetrics> {
  const deployment = await findVisibleDeployment(ctx, input);
  const row = await findDeploymentMetrics(ctx.db, deployment.id);
  if (!row) {
    throw new NotFound(`No metrics for deployment "${deployment.name}" yet; its agent has not reported any.`, { reason: "NoMetricsYet" });
  }
  return toDeploymentMetrics(row);
}
