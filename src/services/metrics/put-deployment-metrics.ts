// PUT /v1/agent/deployments/{id}/metrics: the agent stores a deployment's latest aggregated
// engine signals (only the latest is kept). Its own cluster's deployments only; every role
// named must be one of the deployment's (role sets never change).
import { findDeploymentById } from "../../../db/queries/deployments.ts";
import { upsertDeploymentMetrics } from "../../../db/queries/metrics.ts";
import type { DeploymentSpec } from "../../domain/deployment-spec.ts";
import { InvalidSpec, NotFound } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import type { DeploymentMetrics, DeploymentMetricsInput } from "../../domain/metrics.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toDeploymentMetrics } from "./metrics-view.ts";

export async function putDeploymentMetrics({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { id: string; metrics: DeploymentMetricsInput };
}): Promise<DeploymentMetrics> {
  const agent = requireAgent(ctx.principal);
  const row = isId("deployment", input.id) ? await findDeploymentById(ctx.db, input.id) : undefined;
  if (!row || row.clusterId !== agent.clusterId) throw new NotFound(`No deployment "${input.id}" in this agent's cluster.`);
  const roles = (row.spec as DeploymentSpec).roles.map((role) => role.name);
  const errors = input.metrics.roles.flatMap((role, i) =>
    roles.includes(role.name) ? [] : [{ pointer: `/roles/${i}/name`, message: `no role "${role.name}" in deployment "${row.name}"; its roles are ${roles.join(", ")}` }],
  );
  if (errors.length > 0) throw new InvalidSpec("The metrics name roles the deployment does not have.", errors);
  // A deployment deleted meanwhile takes its row along (cascade); the foreign key refuses a late write.
  const stored = await upsertDeploymentMetrics(ctx.db, {
    deploymentId: row.id,
    observedAt: new Date(input.metrics.observedAt),
    receivedAt: ctx.clock.now(),
    roles: input.metrics.roles,
  }).catch((error: unknown) => {
    if ((error as { code?: string }).code === "23503" || /foreign key/i.test(String(error))) {
      throw new NotFound(`No deployment "${input.id}" in this agent's cluster.`);
    }
    throw error;
  });
  return toDeploymentMetrics(stored);
}
