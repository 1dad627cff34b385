// /v1/api-keys: bearer keys (bp_…), shown once, stored as SHA-256; revoked, never deleted.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, BODY_PROBLEMS, bearerSecurity, jsonBody, jsonContent, problems } from "../../src/api/route-kit.ts";
import { ApiKey, ApiKeyCreate, ApiKeyCreated, ListQuery, listOf } from "../../src/domain/resources.ts";
import { createApiKey } from "../../src/services/api-keys/create-api-key.ts";
import { listApiKeys } from "../../src/services/api-keys/list-api-keys.ts";
import { revokeApiKey } from "../../src/services/api-keys/revoke-api-key.ts";

const base = { tags: ["API keys"], security: bearerSecurity };

export function registerApiKeyRoutes(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    createRoute({
      ...base,
      operationId: "createApiKey",
      method: "post",
      path: "/v1/api-keys",
      summary: "Create an API key (admin); the token is in this answer only",
      description: "Creates a bearer key (bp_\u2026) with a role, installation-wide or bound to one project. The token is shown in this answer only; only its hash is stored.",
      request: { body: jsonBody(ApiKeyCreate, "The key") },
      responses: {
        201: { description: "Created", content: { "application/json": { schema: ApiKeyCreated } } },
        ...problems(...BODY_PROBLEMS),
      },
    }),
    async (c) => {
      const key = await createApiKey({ ctx: serviceContext(c), input: c.req.valid("json") });
      return c.json(key, 201, { Location: `/v1/api-keys/${key.id}` });
    },
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "listApiKeys",
      method: "get",
      path: "/v1/api-keys",
      summary: "List API keys (admin; prefixes only)",
      description: "Pages through the API keys this admin may manage, with their prefixes; tokens are never shown again.",
      request: { query: ListQuery },
      responses: { 200: jsonContent(listOf(ApiKey, "ApiKeyList"), "A page of keys"), ...problems(...AUTH_PROBLEMS) },
    }),
    async (c) => c.json(await listApiKeys({ ctx: serviceContext(c), input: c.req.valid("query") }), 200),
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "revokeApiKey",
      method: "delete",
      path: "/v1/api-keys/{id}",
      summary: "Revoke an API key (admin)",
      description: "Revokes a key: it never authenticates again (other API instances stop accepting it within BERTH_AUTH_CACHE_SECONDS). Revoked keys stay listed with revokedAt.",
      request: { params: z.object({ id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "key_…" }) }) },
      responses: { 204: { description: "Revoked" }, ...problems(...AUTH_PROBLEMS, 404) },
    }),
    async (c) => {
      await revokeApiKey({ ctx: serviceContext(c), input: c.req.valid("param") });
      return c.body(null, 204);
    },
  );
}
