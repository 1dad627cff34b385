// /v1/agent/*: the agent side of docs/design.md §4 — heartbeat, desired state (long-poll),
// deletion confirmation and agent events. Every route needs an agent credential.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { requestSignal, serviceContext, type AppEnv } from "../../src/api/env.ts";
import { holdSlot } from "../../src/api/rate-limit.ts";
import { AUTH_PROBLEMS, BODY_PROBLEMS, bearerSecurity, jsonBody, jsonContent, problems } from "../../src/api/route-kit.ts";
import { AgentEvent, Cluster, DesiredState, Heartbeat } from "../../src/domain/cluster.ts";
import { Unauthorized } from "../../src/domain/errors.ts";
import { REVOKED_CREDENTIAL_DETAIL } from "../../src/services/auth/authenticate.ts";
import { confirmDeletion } from "../../src/services/agent/confirm-deletion.ts";
import { getDesiredState } from "../../src/services/agent/desired-state.ts";
import { receiveHeartbeat } from "../../src/services/agent/heartbeat.ts";
import { recordAgentEvent } from "../../src/services/agent/record-agent-event.ts";
import { registerAgentCredentialRoute } from "./credentials.ts";
import { registerAgentMetricsRoute } from "./metrics.ts";
import { registerAgentOperationRoutes } from "./operations.ts";

const base = { tags: ["Agent"], security: bearerSecurity };

export function registerAgentRoutes(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    createRoute({
      ...base,
      operationId: "agentHeartbeat",
      method: "post",
      path: "/v1/agent/heartbeat",
      summary: "Report that the agent is alive, with the cluster's inventory (every 10 s)",
      description: "The agent's liveness and its cluster's GPU inventory; a cluster without heartbeats is reported disconnected.",
      request: { body: jsonBody(Heartbeat, "Agent version and inventory") },
      responses: { 200: jsonContent(Cluster, "The cluster as now recorded"), ...problems(...BODY_PROBLEMS, 404) },
    }),
    async (c) => c.json(await receiveHeartbeat({ ctx: serviceContext(c), input: c.req.valid("json") }), 200),
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "agentDesiredState",
      method: "get",
      path: "/v1/agent/desired",
      summary: "The cluster's deployments changed after `since` (long-poll)",
      description:
        "since=0 returns every deployment of the cluster. Otherwise answers as soon as a deployment of the cluster " +
        "changes or is removed after `since`, or empty after waitSeconds. Pass the answer's resourceVersion next time. " +
        "A `since` older than what retention keeps of deletions is answered 410: ask again with since=0.",
      request: {
        query: z.object({
          since: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).meta({ format: "int64" }).default(0),
          waitSeconds: z.coerce.number().int().min(0).max(60).meta({ format: "int32" }).default(30),
        }),
      },
      responses: { 200: jsonContent(DesiredState, "Desired state"), ...problems(...AUTH_PROBLEMS, 410) },
    }),
    async (c) => {
      const { since, waitSeconds } = c.req.valid("query");
      // Over the credential's cap of open long-polls: 429 before the wait.
      const release = holdSlot(c, "long-poll");
      // Held so a revocation (or rotation's expiry) ends the wait at once, with a 401.
      const hold = c.get("deps").notifications?.hold(c.get("principal"));
      try {
        const signal = hold ? AbortSignal.any([requestSignal(c), hold.signal]) : requestSignal(c);
        const state = await getDesiredState({ ctx: serviceContext(c), input: { since, waitSeconds, signal } });
        if (hold?.signal.aborted) throw new Unauthorized(REVOKED_CREDENTIAL_DETAIL);
        return c.json(state, 200);
      } finally {
        hold?.release();
        release();
      }
    },
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "agentConfirmDeletion",
      method: "delete",
      path: "/v1/agent/deployments/{id}",
      summary: "Confirm that every object of a deleted deployment is gone",
      description: "The agent says every object of a deployment being deleted is gone; the row is then removed and deployment.deleted is emitted.",
      request: { params: z.object({ id: z.string().max(64).meta({ param: { name: "id", in: "path" } }) }) },
      responses: { 204: { description: "The record is removed" }, ...problems(...AUTH_PROBLEMS, 404, 409) },
    }),
    async (c) => {
      await confirmDeletion({ ctx: serviceContext(c), input: c.req.valid("param") });
      return c.body(null, 204);
    },
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "agentRecordEvent",
      method: "post",
      path: "/v1/agent/events",
      summary: "Record what happened in the cluster (replica retiring, retired, scaled, resized)",
      description:
        "deployment.scaled takes only shadow recommendations, with data { role, from, to, mode: shadow, reason, signals } (422 otherwise): " +
        "an applied change is recorded by the autoscaler's replicas PATCH itself.",
      request: { body: jsonBody(AgentEvent, "The event") },
      responses: { 202: { description: "Recorded" }, ...problems(...BODY_PROBLEMS, 404) },
    }),
    async (c) => {
      await recordAgentEvent({ ctx: serviceContext(c), input: c.req.valid("json") });
      return c.body(null, 202);
    },
  );
  registerAgentOperationRoutes(app);
  registerAgentMetricsRoute(app);
  registerAgentCredentialRoute(app);
}
