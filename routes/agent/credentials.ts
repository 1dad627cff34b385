// POST /v1/agent/credentials: the agent rotates its own credential.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { rotateAgentCredential } from "../../src/services/clusters/agent-credentials.ts";
import { id, LIMITS, text, timestamp } from "../../src/domain/limits.ts";

const route = createRoute({
  tags: ["Agent"],
  security: bearerSecurity,
  operationId: "agentRotateCredential",
  method: "post",
  path: "/v1/agent/credentials",
  summary: "Issue a new agent credential; the calling one keeps working for an overlap window, then expires",
  description:
    "The overlap (BERTH_AGENT_CREDENTIAL_OVERLAP_SECONDS, default 600) lets the agent store the new credential before the old stops working.",
  responses: {
    201: jsonContent(
      z
        .object({
          clusterId: id(),
          token: text(LIMITS.token).describe("The new credential (ba_…); shown once"),
          previousExpiresAt: timestamp().describe("When the calling credential stops working"),
        })
        .meta({ id: "AgentCredentialRotated" }),
      "The new credential",
    ),
    ...problems(...AUTH_PROBLEMS),
  },
});

export function registerAgentCredentialRoute(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await rotateAgentCredential({ ctx: serviceContext(c) }), 201));
}
