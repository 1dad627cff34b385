// The admin API the agent drives (bearer token; /admin/health is open): PUT replaces the
// endpoint set after reading each new endpoint's /v1/models, GET reports it with each
// endpoint's in-flight count (what retirement drains on) and the held count.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { z } from "zod";
import { BodyTooLarge, readBody } from "./body.ts";
import type { RouterConfig } from "./config.ts";
import { ENDPOINT_STATES, ROLES, type Endpoint, type EndpointConfig, type EndpointRegistry, type ModelCard, type ModelRead, type Role } from "./endpoints.ts";
import type { HoldQueue } from "./hold.ts";
import type { Policy } from "./policies/index.ts";
import { sendProblem } from "./problem.ts";

const ADMIN_BODY_LIMIT = 4 * 1024 * 1024;
const MODEL_READ_ATTEMPTS = 2;
/** How often endpoints whose model list could not be read are tried again. */
const MODEL_REFRESH_MS = 5_000;

const RANKS_RANGE = "must be a whole number of data-parallel engines from 1 to 1024";

const EndpointEntry = z.strictObject({
  id: z.string().min(1).max(253),
  url: z.string().refine(isHttpUrl, "must be an absolute http:// or https:// URL"),
  role: z.enum(ROLES),
  rank: z.number().int().min(0).optional(),
  state: z.enum(ENDPOINT_STATES),
  bootstrapPort: z.number().int().min(1).max(65535).optional(),
  ranks: z
    .number(RANKS_RANGE)
    .int(RANKS_RANGE)
    .min(1, RANKS_RANGE)
    .max(1024, RANKS_RANGE)
    .optional()
    .describe("data-parallel engines behind this endpoint; weights least_load and the cache_aware fallback; default 1"),
});

export const PutEndpointsBody = z
  .strictObject({
    endpoints: z.array(EndpointEntry).max(4096),
    holdWhenEmpty: z.boolean().optional(),
  })
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.endpoints.forEach((endpoint, index) => {
      if (seen.has(endpoint.id)) {
        ctx.addIssue({ code: "custom", path: ["endpoints", index, "id"], message: `duplicate endpoint id "${endpoint.id}"` });
      }
      seen.add(endpoint.id);
    });
    const server = body.endpoints.findIndex((endpoint) => endpoint.role === "server");
    const split = body.endpoints.findIndex((endpoint) => endpoint.role !== "server");
    if (server >= 0 && split >= 0) {
      ctx.addIssue({
        code: "custom",
        path: ["endpoints", Math.max(server, split), "role"],
        message: "a router serves either server endpoints or prefill/decode/encode endpoints, not both",
      });
    }
  });
export type PutEndpointsBody = z.infer<typeof PutEndpointsBody>;

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

export interface AdminDeps {
  config: RouterConfig;
  registry: EndpointRegistry;
  hold: HoldQueue;
  policies: ReadonlyMap<Role, Policy>;
  logger: Logger;
}

export class Admin {
  private readonly tokenDigest: Buffer;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly refreshTimer: NodeJS.Timeout;
  private refreshing = false;

  constructor(private readonly deps: AdminDeps) {
    this.tokenDigest = digest(deps.config.adminToken);
    this.refreshTimer = setInterval(() => void this.refreshUnknownModels(), MODEL_REFRESH_MS);
    this.refreshTimer.unref();
  }

  close(): void {
    clearInterval(this.refreshTimer);
  }

  /** Every /admin path except /admin/health. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (!this.authorized(req)) {
      req.resume();
      return sendProblem(res, "unauthorized", "The admin API needs `Authorization: Bearer <admin token>`.", {
        headers: { "www-authenticate": 'Bearer realm="berth-router"' },
      });
    }
    if (path !== "/admin/endpoints") {
      req.resume();
      return sendProblem(res, "not-found", `There is no admin resource at ${path}.`);
    }
    if (req.method === "GET") return sendJson(res, 200, this.view());
    if (req.method !== "PUT") {
      req.resume();
      return sendProblem(res, "method-not-allowed", "Use GET or PUT on /admin/endpoints.", { headers: { allow: "GET, PUT" } });
    }
    let raw: Buffer;
    try {
      raw = await readBody(req, ADMIN_BODY_LIMIT);
    } catch (error) {
      if (error instanceof BodyTooLarge) return sendProblem(res, "payload-too-large", error.message);
      return; // the agent went away
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString("utf8"));
    } catch {
      return sendProblem(res, "malformed-body", "The request body is not valid JSON; send { endpoints: [...] }.");
    }
    const result = PutEndpointsBody.safeParse(parsed);
    if (!result.success) {
      const errors = result.error.issues.map((issue) => ({
        pointer: "/" + issue.path.map((part) => String(part).replaceAll("~", "~0").replaceAll("/", "~1")).join("/"),
        detail: issue.message,
      }));
      return sendProblem(res, "invalid-request", "The endpoint list is not valid; see errors[].", { extensions: { errors } });
    }
    await this.apply(result.data);
    sendJson(res, 200, this.view());
  }

  /** Applies pushes in arrival order; each reads the model lists it needs first. */
  apply(body: PutEndpointsBody): Promise<void> {
    const run = this.queue.then(() => this.applyNow(body));
    this.queue = run.catch(() => {});
    return run;
  }

  view(): object {
    const { registry, hold } = this.deps;
    return {
      endpoints: registry.list().map(endpointView),
      models: registry.models().map((card) => card.id),
      holdWhenEmpty: registry.holdWhenEmpty,
      held: hold.size,
    };
  }

  private async applyNow(body: PutEndpointsBody): Promise<void> {
    const { registry, hold, policies, logger, config } = this.deps;
    const configs: EndpointConfig[] = body.endpoints;
    const toRead = registry.needsModels(configs);
    const reads = new Map<string, ModelRead>(
      await Promise.all(toRead.map(async (entry) => [entry.id, await readModels(entry.url, config.modelsTimeoutMs)] as const)),
    );
    const removed = registry.replace(configs, reads, body.holdWhenEmpty ?? false);
    for (const id of removed) for (const policy of policies.values()) policy.forget(id);
    for (const [id, read] of reads) {
      if (read.cards === null) logger.warn({ endpoint: id, err: read.error }, "could not read the endpoint's /v1/models");
    }
    logger.info(
      {
        endpoints: configs.length,
        draining: configs.filter((entry) => entry.state === "draining").length,
        removed: removed.length,
        models: registry.models().map((card) => card.id),
        holdWhenEmpty: registry.holdWhenEmpty,
      },
      "endpoints updated",
    );
    hold.releaseAll();
  }

  /** Endpoints whose /v1/models failed are read again in the background until it works. */
  private async refreshUnknownModels(): Promise<void> {
    if (this.refreshing) return;
    this.refreshing = true;
    try {
      const unknown = this.deps.registry.list().filter((endpoint) => endpoint.models === null);
      for (const endpoint of unknown) {
        const read = await readModels(endpoint.url, this.deps.config.modelsTimeoutMs);
        if (read.cards !== null) {
          this.deps.registry.updateModels(endpoint, read);
          this.deps.hold.releaseAll();
        }
      }
    } finally {
      this.refreshing = false;
    }
  }

  private authorized(req: IncomingMessage): boolean {
    const header = req.headers.authorization;
    if (header === undefined || !/^bearer /i.test(header)) return false;
    return timingSafeEqual(digest(header.slice(7).trim()), this.tokenDigest);
  }
}

function endpointView(endpoint: Endpoint): object {
  return {
    id: endpoint.id,
    url: endpoint.url,
    role: endpoint.role,
    ...(endpoint.rank !== undefined ? { rank: endpoint.rank } : {}),
    state: endpoint.state,
    ...(endpoint.bootstrapPort !== undefined ? { bootstrapPort: endpoint.bootstrapPort } : {}),
    ...(endpoint.ranks !== undefined ? { ranks: endpoint.ranks } : {}),
    inFlight: endpoint.inFlight,
    models: endpoint.models?.map((card) => card.id) ?? null,
    ...(endpoint.modelsError !== undefined ? { modelsError: endpoint.modelsError } : {}),
  };
}

function digest(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

/** GET <url>/v1/models, tried twice within the timeout each; the ids (and cards) it lists. */
export async function readModels(url: string, timeoutMs: number): Promise<ModelRead> {
  const target = url.replace(/\/+$/, "") + "/v1/models";
  let error = "";
  for (let attempt = 0; attempt < MODEL_READ_ATTEMPTS; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 200));
    try {
      const response = await fetch(target, { signal: AbortSignal.timeout(timeoutMs) });
      if (!response.ok) {
        error = `GET ${target}: HTTP ${response.status}`;
        await response.body?.cancel();
        continue;
      }
      const body = (await response.json()) as { data?: unknown };
      if (!Array.isArray(body.data)) {
        error = `GET ${target}: no data[] in the answer`;
        continue;
      }
      const cards = body.data.filter(
        (card): card is ModelCard => typeof card === "object" && card !== null && typeof (card as { id?: unknown }).id === "string",
      );
      return { cards };
    } catch (caught) {
      error = `GET ${target}: ${(caught as Error).message}`;
    }
  }
  return { cards: null, error };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
