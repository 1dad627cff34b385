// The OpenAPI 3.1 document, generated from the zod schemas of every route and then
// completed with openapi3-ts (security scheme, default security, and the `webhooks`
// section: one entry per event type, its body built from EVENT_DATA), the tags, and the
// headers every response can carry (rate limits, CORS); served at /openapi.json.
import type { OpenAPIHono } from "@hono/zod-openapi";
import {
  OpenApiBuilder,
  type HeaderObject,
  type OpenAPIObject,
  type OperationObject,
  type ParameterObject,
  type PathItemObject,
  type ResponseObject,
  type TagObject,
} from "openapi3-ts/oas31";
import { EVENT_DATA, EVENT_TYPES, type EventType } from "../domain/events.ts";
import { webhookPayloadSchema } from "../domain/webhooks.ts";
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
  const builder = OpenApiBuilder.create(generated).addSecurityScheme("bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "An API key (bp_…), the installation admin token, or an agent credential (ba_…)",
  });
  for (const type of EVENT_TYPES) builder.addWebhook(type, webhookPathItem(type));
  for (const [name, header] of Object.entries(RESPONSE_HEADERS)) builder.addHeader(name, header);
  const document = builder.getSpec();
  document.security = BEARER;
  document.tags = TAGS;
  declarePublicOperations(document);
  declareIdempotentPosts(document);
  declareResponseHeaders(document);
  return document;
}

/** Every tag an operation uses, in the order the reference lists them. */
export const TAGS: TagObject[] = [
  { name: "Projects", description: "Tenants: a namespace per cluster, a GPU quota, and who may use the take-over tier." },
  { name: "API keys", description: "Bearer keys (bp_…) with a role, installation-wide or bound to one project." },
  { name: "Deployments", description: "Model deployments: the spec (intent), the status the agent observed, and their verbs." },
  { name: "Clusters", description: "Kubernetes clusters an agent serves, and the join tokens that register agents." },
  { name: "Agent", description: "The agent's protocol: desired state, status, heartbeats, events, operations and metrics." },
  { name: "Events", description: "The event log, paged or streamed as server-sent events." },
  { name: "Webhooks", description: "Signed deliveries of events to endpoints, their attempts and redeliveries." },
  { name: "Webhook events", description: "The bodies berth POSTs to a webhook endpoint, one per event type." },
  { name: "Deployment requests", description: "A model, a workload and SLA targets, planned into a deployment spec." },
  { name: "Operations", description: "Long-running operations, and the probes that say the process serves." },
  { name: "Catalog", description: "Models, GPUs and engines berth knows, with what each engine supports." },
  { name: "Internal", description: "Background work an external scheduler may trigger (cron)." },
];

/**
 * Header components, named as the headers themselves. The limiter sends the IETF
 * RateLimit-Policy and RateLimit fields on every /v1 answer and Retry-After on a 429
 * (https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/); the CORS
 * middleware sends Access-Control-Allow-Origin only to an origin BERTH_CORS_ORIGINS lists.
 */
const RESPONSE_HEADERS: Record<string, HeaderObject> = {
  "RateLimit-Policy": {
    description: 'The quota policies that apply to this caller, as a structured-field list, e.g. `"default";q=600;w=60`.',
    schema: { type: "string", maxLength: 1024, pattern: "^[\\x20-\\x7E]*$" },
  },
  RateLimit: {
    description: 'What is left of each policy\'s quota, as a structured-field list, e.g. `"default";r=599;t=60` (r remaining, t seconds to reset).',
    schema: { type: "string", maxLength: 1024, pattern: "^[\\x20-\\x7E]*$" },
  },
  "Retry-After": {
    description: "Seconds to wait before trying again (RFC 9110 §10.2.3).",
    schema: { type: "integer", format: "int32", minimum: 0, maximum: 86_400 },
  },
  "Access-Control-Allow-Origin": {
    description: "The caller's Origin, echoed only when BERTH_CORS_ORIGINS lists it exactly; absent otherwise (no CORS by default).",
    schema: { type: "string", maxLength: 2048, format: "uri" },
  },
};

const headerRef = (name: keyof typeof RESPONSE_HEADERS) => ({ $ref: `#/components/headers/${name}` });

/**
 * Declares on each response the headers it can carry, so no route has to: CORS on every
 * answer (the middleware runs before routing), the rate-limit fields on /v1's 2xx and 4xx
 * answers (the limiter guards /v1 only; the probes are not limited), Retry-After on 429.
 */
function declareResponseHeaders(document: OpenAPIObject): void {
  for (const [path, item] of Object.entries(document.paths ?? {}) as [string, PathItemObject][]) {
    const limited = path.startsWith("/v1/");
    for (const method of METHODS) {
      const responses = item[method]?.responses as Record<string, ResponseObject> | undefined;
      for (const [status, response] of Object.entries(responses ?? {})) {
        const headers: Record<string, unknown> = { ...response.headers, "Access-Control-Allow-Origin": headerRef("Access-Control-Allow-Origin") };
        if (limited && /^[24]/.test(status)) {
          headers["RateLimit-Policy"] = headerRef("RateLimit-Policy");
          headers.RateLimit = headerRef("RateLimit");
        }
        if (status === "429") headers["Retry-After"] = headerRef("Retry-After");
        response.headers = headers as ResponseObject["headers"];
      }
    }
  }
}

/**
 * The Idempotency-Key middleware (src/api/idempotency.ts) serves every authenticated POST, not
 * only the routes that name the header: declare the header on each such POST, and the two
 * answers it adds, 409 (the first request with the key still runs) and 422 (the key was used
 * for another request), where the route does not declare them itself.
 */
function declareIdempotentPosts(document: OpenAPIObject): void {
  const problem = { $ref: "#/components/schemas/Problem" };
  const answers: Record<string, string> = {
    "409": "Conflicts with the current state, or a request with this Idempotency-Key is still running",
    "422": "Refused, or an Idempotency-Key reused for another request",
  };
  for (const [path, item] of Object.entries(document.paths ?? {}) as [string, PathItemObject][]) {
    const operation = item.post;
    if (!path.startsWith("/v1/") || !operation || operation.security?.length === 0) continue;
    const parameters = (operation.parameters ?? []) as ParameterObject[];
    if (!parameters.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key")) {
      operation.parameters = [
        ...parameters,
        {
          name: "idempotency-key",
          in: "header",
          required: false,
          description: "Replay-safe POST key: the same key and body replay the first success",
          schema: { type: "string", maxLength: 255 },
        },
      ];
    }
    operation.responses ??= {};
    for (const [status, description] of Object.entries(answers)) {
      operation.responses[status] ??= { description, content: { "application/problem+json": { schema: problem } } };
    }
  }
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

/** The component name of an event type's delivery body: deployment.created → DeploymentCreatedWebhook. */
function payloadComponent(type: EventType): string {
  return `${type.split(/[._]/).map((part) => part[0]!.toUpperCase() + part.slice(1)).join("")}Webhook`;
}

const SIGNATURE_HEADERS: ParameterObject[] = [
  { name: "webhook-id", in: "header", required: true, schema: { type: "string", maxLength: 64, pattern: "^evt_[A-Za-z0-9_-]+$" }, description: "The event id (evt_…): the same on every attempt, so deduplicate on it" },
  { name: "webhook-timestamp", in: "header", required: true, schema: { type: "string", maxLength: 20, pattern: "^[0-9]+$" }, description: "Seconds since the epoch when this attempt was sent" },
  {
    name: "webhook-signature",
    in: "header",
    required: true,
    schema: { type: "string", maxLength: 1024, pattern: "^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$" },
    description:
      "Space-separated `v1,<base64 HMAC-SHA256 of id.timestamp.body>` signatures with the endpoint's secret " +
      "(and for 24 h after a rotation, also the previous one). Verify with any Standard Webhooks library.",
  },
];

function webhookPathItem(type: EventType): PathItemObject {
  return {
    post: {
      operationId: `on${payloadComponent(type).replace(/Webhook$/, "")}`,
      summary: type === "webhook.test" ? "Sent by POST /v1/webhooks/{id}/test only" : `Sent when ${type} occurs`,
      tags: ["Webhook events"],
      security: [],
      parameters: SIGNATURE_HEADERS,
      requestBody: {
        required: true,
        content: { "application/json": { schema: { $ref: `#/components/schemas/${payloadComponent(type)}` } } },
      },
      responses: {
        "2XX": { description: "Received. Any other answer is retried (Retry-After is honoured); 410 disables the endpoint." },
      },
    },
  };
}

/** Registers each event type's delivery body as a component, so the webhooks section can point at it. */
function registerWebhookPayloads(app: OpenAPIHono<AppEnv>): void {
  for (const type of EVENT_TYPES) {
    app.openAPIRegistry.register(payloadComponent(type), webhookPayloadSchema(type, EVENT_DATA[type]));
  }
}

export function registerOpenApiDocument(app: OpenAPIHono<AppEnv>): void {
  registerWebhookPayloads(app);
  let document: OpenAPIObject | undefined;
  app.get("/openapi.json", (c) => c.json((document ??= buildOpenApiDocument(app))));
}
