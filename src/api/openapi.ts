// The OpenAPI 3.1 document, generated from the zod schemas of every route and then
// completed with openapi3-ts (security scheme, servers); served at /openapi.json.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { OpenApiBuilder, type OpenAPIObject } from "openapi3-ts/oas31";
import type { AppEnv } from "./env.ts";

export const API_VERSION = "0.1.0";

export function buildOpenApiDocument(app: OpenAPIHono<AppEnv>): OpenAPIObject {
  const generated = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "berth API",
      version: API_VERSION,
      description:
        "berth is a control plane for serving large language models on GPU clusters. " +
        "Errors are RFC 9457 problem+json; reads carry an ETag and writes accept If-Match; POSTs accept Idempotency-Key.",
    },
  }) as OpenAPIObject;
  return OpenApiBuilder.create(generated)
    .addSecurityScheme("bearerAuth", {
      type: "http",
      scheme: "bearer",
      description: "An API key (bp_…), the installation admin token, or an agent credential (ba_…)",
    })
    .getSpec();
}

export function registerDocs(app: OpenAPIHono<AppEnv>): void {
  let document: OpenAPIObject | undefined;
  app.get("/openapi.json", (c) => c.json((document ??= buildOpenApiDocument(app))));
}
