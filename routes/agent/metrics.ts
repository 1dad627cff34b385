// PUT /v1/agent/deployments/{id}/metrics: the agent's latest aggregated engine signals.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonBody, jsonContent, problems } from "../../src/api/route-kit.ts";
import { DeploymentMetrics, DeploymentMetricsInput } from "../../src/domain/metrics.ts";
import { putDeploymentMetrics } from "../../src/services/metrics/put-deployment-metrics.ts";

const route = createRoute({
  tags: ["Agent"],
  security: bearerSecurity,
  operationId: "agentPutDeploymentMetrics",
  method: "put",
  path: "/v1/agent/deployments/{id}/metrics",
  summary: "Store a deployment's latest aggregated engine signals (replaces the previous ones)",
  description: "Replaces the deployment's stored engine signals with the agent's latest aggregation; the metrics read answers these.",
  request: {
    params: z.object({ id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "Deployment id" }) }),
    body: jsonBody(DeploymentMetricsInput, "Per role: the signals read and what could not be read"),
  },
  responses: { 200: jsonContent(DeploymentMetrics, "As stored"), ...problems(...BODY_PROBLEMS, 404) },
});

export function registerAgentMetricsRoute(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const metrics = await putDeploymentMetrics({ ctx: serviceContext(c), input: { id: c.req.valid("param").id, metrics: c.req.valid("json") } });
    return c.json(metrics, 200);
  });
}
