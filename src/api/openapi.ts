// The OpenAPI 3.1 document, generated from the zod schemas of every route and then
// completed with openapi3-ts (security scheme, default security); served at /openapi.json.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { OpenApiBuilder, type OpenAPIObject, type OperationObject, type PathItemObject } from "openapi3-ts/oas31";
import type { AppEnv } from "./env.ts";

export const API_VERSION = "0.1.0";

const BEARER = [{ bearerAuth: [] }];
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

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
  const document = OpenApiBuilder.create(generated)
    .addSecurityScheme("bearerAuth", {
      type: "http",
      scheme: "bearer",
      description: "An API key (bp_…), the installation admin token, or an agent credential (ba_…)",
    })
    .getSpec();
  document.security = BEARER;
  declarePublicOperations(document);
  return document;
}

/**
 * The bearer middleware guards /v1/* only, so an operation outside /v1 that declares no
 * security (the probes) is public: say so with `security: []` rather than let it inherit
 * the document's bearer default. Operations under /v1 declare their own.
 */
function declarePublicOperations(document: OpenAPIObject): void {
  for (const [path, item] of Object.entries(document.paths ?? {}) as [string, PathItemObject][]) {
    if (path.startsWith("/v1/")) continue;
    for (const method of METHODS) {
      const operation: OperationObject | undefined = item[method];
      if (operation && operation.security === undefined) operation.security = [];
    }
  }
}

export function registerOpenApiDocument(app: OpenAPIHono<AppEnv>): void {
  let document: OpenAPIObject | undefined;
  app.get("/openapi.json", (c) => c.json((document ??= buildOpenApiDocument(app))));
}
