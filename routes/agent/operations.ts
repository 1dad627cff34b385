// /v1/agent/operations: the agent records its long-running work (intent before action),
// lists what it must resume after a restart, and moves each operation on.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, BODY_PROBLEMS, bearerSecurity, jsonBody, jsonContent, mergePatchBody, problems } from "../../src/api/route-kit.ts";
import { AgentOperationCreate, AgentOperationPatch, Operation } from "../../src/domain/operations.ts";
import { listOf } from "../../src/domain/resources.ts";
import { createAgentOperation } from "../../src/services/operations/create-agent-operation.ts";
import { listAgentOperations } from "../../src/services/operations/list-agent-operations.ts";
import { etagOfOperation } from "../../src/services/operations/operation-view.ts";
import { patchAgentOperation } from "../../src/services/operations/patch-agent-operation.ts";
import { ETagHeader, OperationFilterQuery, OperationParams } from "../operations/shared.ts";

const base = { tags: ["Agent"], security: bearerSecurity };

const create = createRoute({
  ...base,
  operationId: "agentCreateOperation",
  method: "post",
  path: "/v1/agent/operations",
  summary: "Record an operation on a deployment of the agent's cluster",
  description:
    "Pending, or Running when work has begun (then operation.started, and replica.retiring for a retire, are recorded). " +
    "A second Pending or Running operation of the same kind on the same role and replica is a 409 whose `existingOperationId` names the one to adopt. " +
    "Idempotency-Key replays the first answer.",
  request: {
    headers: z.object({ "idempotency-key": z.string().max(255).optional().describe("Replay-safe POST key") }),
    body: jsonBody(AgentOperationCreate, "The operation"),
  },
  responses: {
    201: {
      description: "Recorded",
      headers: { ...ETagHeader, Location: { description: "URL of the operation", schema: { type: "string", format: "uri-reference", maxLength: 2048 } } },
      content: { "application/json": { schema: Operation } },
    },
    ...problems(...BODY_PROBLEMS, 404, 409),
  },
});

const list = createRoute({
  ...base,
  operationId: "agentListOperations",
  method: "get",
  path: "/v1/agent/operations",
  summary: "The operations of the agent's cluster (phase=Pending&phase=Running: what to resume)",
  description: "Pages through the operations of the agent's cluster, filtered by phase, so a restarted agent resumes what was running.",
  request: { query: OperationFilterQuery },
  responses: { 200: jsonContent(listOf(Operation, "AgentOperationList"), "A page of operations, oldest first"), ...problems(...AUTH_PROBLEMS) },
});

const patch = createRoute({
  ...base,
  operationId: "agentPatchOperation",
  method: "patch",
  path: "/v1/agent/operations/{id}",
  summary: "Move an operation on (merge patch of phase, step, steps, message, progress, result, error)",
  description:
    "Phases go Pending → Running → Succeeded | Failed | Aborted (Pending may also end Failed or Aborted); any other move is a 409 " +
    "listing `allowedPhases`, and a terminal operation is final (409). The server sets finishedAt and records operation.* " +
    "(and for a retire replica.*) events.",
  request: { params: OperationParams, body: mergePatchBody(AgentOperationPatch, "Merge patch") },
  responses: {
    200: { description: "The operation", headers: ETagHeader, content: { "application/json": { schema: Operation } } },
    ...problems(...BODY_PROBLEMS, 404, 409),
  },
});

export function registerAgentOperationRoutes(app: OpenAPIHono<AppEnv>) {
  app.openapi(create, async (c) => {
    const operation = await createAgentOperation({ ctx: serviceContext(c), input: c.req.valid("json") });
    return c.json(operation, 201, { Location: `/v1/operations/${operation.id}`, ETag: etagOfOperation(operation.resourceVersion) });
  });
  app.openapi(list, async (c) => c.json(await listAgentOperations({ ctx: serviceContext(c), input: c.req.valid("query") }), 200));
  app.openapi(patch, async (c) => {
    const operation = await patchAgentOperation({ ctx: serviceContext(c), input: { ...c.req.valid("param"), patch: c.req.valid("json") } });
    return c.json(operation, 200, { ETag: etagOfOperation(operation.resourceVersion) });
  });
}
