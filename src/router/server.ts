// The router's HTTP server (node:http: byte-for-byte streaming, backpressure, cancellation
// without adapters): dispatch, the OpenAI routes, and the routing plan (404 unlisted model,
// 503 at once when nothing eligible, hold only for a role at zero in scale-to-zero mode).
// Its own errors go out through sendError, which shapes them by path (OpenAI on /v1/*).
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { Admin, sendJson } from "./admin.ts";
import { earlyAnswerServerOptions } from "../node-http/early-answers.ts";
import { BodyTooLarge, readBody } from "./body.ts";
import type { RouterConfig } from "./config.ts";
import { EndpointRegistry, ROLES, type Role } from "./endpoints.ts";
import { Aborted, Exchange } from "./exchange.ts";
import { HoldQueue } from "./hold.ts";
import { RouterMetrics } from "./metrics.ts";
import {
  hasMediaParts,
  InvalidInferenceRequest,
  parseInferenceRequest,
  promptText,
  type InferenceKind,
  type InferenceRequest,
} from "./openai-request.ts";
import { legRequestId, primeEncoder, serveSglangPd, serveVllmPd, type PdContext } from "./pd.ts";
import { createPolicy, type Policy, type RouteInput } from "./policies/index.ts";
import { sendError, type ProblemKind } from "./problem.ts";
import { forwardHeaders, type RouterFailure, Upstreams } from "./proxy.ts";

const INFERENCE_PATHS: Record<string, InferenceKind> = {
  "/v1/chat/completions": "chat",
  "/v1/completions": "completion",
};

type Plan =
  | { kind: "route"; encode: boolean }
  | { kind: "hold" }
  | { kind: "problem"; problem: ProblemKind; detail: string; pointer?: string; retryAfter?: number };

export interface RouterOptions {
  config: RouterConfig;
  logger: Logger;
  /** Process metrics (CPU, memory, event-loop lag) in /metrics; tests running many routers turn them off. */
  defaultMetrics?: boolean;
}

export interface RunningRouter {
  url: string;
  port: number;
  registry: EndpointRegistry;
  admin: Admin;
  /** Stops accepting, waits up to `graceMs` for in-flight requests, then closes everything. */
  close(graceMs?: number): Promise<void>;
}

export class Router {
  readonly registry = new EndpointRegistry();
  readonly hold: HoldQueue;
  readonly metrics: RouterMetrics;
  readonly admin: Admin;
  readonly upstreams: Upstreams;
  readonly server: http.Server;
  private readonly policies = new Map<Role, Policy>();
  private active = 0;
  private idle: (() => void) | undefined;

  constructor(
    private readonly config: RouterConfig,
    private readonly logger: Logger,
    defaultMetrics = true,
  ) {
    for (const role of ROLES) this.policies.set(role, createPolicy(config.policy, config));
    this.hold = new HoldQueue(config.holdMax, config.holdTimeoutMs);
    this.metrics = new RouterMetrics(this.registry, () => this.hold.size, defaultMetrics);
    this.admin = new Admin({ config, registry: this.registry, hold: this.hold, policies: this.policies, logger });
    this.upstreams = new Upstreams({ config, registry: this.registry, policies: this.policies, metrics: this.metrics, logger });
    // requestTimeout bounds receiving a request (a slow upload); answers are bounded by --request-timeout.
    // Early answers (413 before the body is read) keep connections usable: see early-answers.ts.
    const options = { ...earlyAnswerServerOptions, keepAliveTimeout: 30_000, headersTimeout: 60_000, requestTimeout: 300_000 };
    this.server = http.createServer(options, (req, res) => {
      this.dispatch(req, res);
    });
  }

  private dispatch(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    const kind = INFERENCE_PATHS[path];
    if (kind !== undefined) {
      if (req.method !== "POST") return this.refuseMethod(req, res, "POST");
      this.active++;
      res.once("close", () => this.settled());
      void this.serveInference(req, res, kind, path);
      return;
    }
    if (path === "/v1/models") {
      if (req.method !== "GET") return this.refuseMethod(req, res, "GET");
      return sendJson(res, 200, { object: "list", data: this.registry.models() });
    }
    if (path.startsWith("/v1/models/")) {
      if (req.method !== "GET") return this.refuseMethod(req, res, "GET");
      return this.serveModel(req, res, decodeURIComponent(path.slice("/v1/models/".length)));
    }
    if (path === "/admin/health") return sendJson(res, 200, { status: "ok" });
    if (path.startsWith("/admin/")) {
      this.admin.handle(req, res, path).catch((error: unknown) => this.internalError(res, error));
      return;
    }
    if (path === "/metrics" && req.method === "GET") {
      this.metrics.render().then(
        (text) => {
          res.writeHead(200, { "content-type": this.metrics.contentType });
          res.end(text);
        },
        (error: unknown) => this.internalError(res, error),
      );
      return;
    }
    req.resume();
    sendError(res, "not-found", `There is nothing at ${path}; the router serves /v1/chat/completions, /v1/completions and /v1/models.`, {
      instance: clientRequestId(req),
    });
  }

  /** GET /v1/models/{id}: the card of a served model (ids may contain "/", e.g. "Qwen/Qwen3-8B"). */
  private serveModel(req: IncomingMessage, res: ServerResponse, id: string): void {
    const card = this.registry.models().find((candidate) => candidate.id === id);
    if (card !== undefined) return sendJson(res, 200, card);
    const listed = this.registry.models().map((model) => `"${model.id}"`).join(", ");
    sendError(res, "model-not-found", `The model "${id}" is not served here; the models are ${listed || "none"}.`, {
      pointer: "/model",
      instance: clientRequestId(req),
    });
  }

  private async serveInference(req: IncomingMessage, res: ServerResponse, kind: InferenceKind, path: string): Promise<void> {
    const exchange = new Exchange(res, this.config.requestTimeoutMs, clientRequestId(req));
    try {
      let raw: Buffer;
      try {
        raw = await readBody(req, this.config.maxBodyBytes);
      } catch (error) {
        if (!(error instanceof BodyTooLarge)) throw error;
        this.problem(exchange, "payload-too-large", `${error.message} Send a smaller prompt (the limit is --max-body-bytes).`);
        return;
      }
      let request: InferenceRequest;
      try {
        request = parseInferenceRequest(kind, path, raw);
      } catch (error) {
        if (!(error instanceof InvalidInferenceRequest)) throw error;
        this.problem(exchange, error.malformed ? "malformed-body" : "invalid-request", error.message, {}, error.pointer);
        return;
      }
      await this.route(exchange, request, req);
    } catch (error) {
      if (error instanceof Aborted) {
        if (error.reason === "timeout") {
          this.problem(exchange, "gateway-timeout", `No answer within the request timeout (${this.config.requestTimeoutMs / 1000} s).`);
        }
        return;
      }
      this.internalError(res, error);
    }
  }

  private async route(exchange: Exchange, request: InferenceRequest, req: IncomingMessage): Promise<void> {
    const media = hasMediaParts(request);
    let plan = this.plan(request, media);
    while (plan.kind === "hold") {
      const outcome = await this.hold.wait(exchange);
      if (outcome === "full") {
        return this.problem(exchange, "unavailable", "Too many requests are already waiting for endpoints to start.", {
          "retry-after": "5",
        });
      }
      if (outcome === "closing") {
        return this.problem(exchange, "unavailable", "The router is shutting down.", { "retry-after": "1" });
      }
      if (outcome === "timeout") {
        return this.problem(
          exchange,
          "unavailable",
          `No endpoint started within the hold timeout (${this.config.holdTimeoutMs / 1000} s).`,
          { "retry-after": "5" },
        );
      }
      plan = this.plan(request, media);
    }
    if (plan.kind === "problem") {
      const headers: Record<string, string> = plan.retryAfter !== undefined ? { "retry-after": String(plan.retryAfter) } : {};
      return this.problem(exchange, plan.problem, plan.detail, headers, plan.pointer);
    }

    const headers = forwardHeaders(req.headers);
    const sessionHeader = req.headers["x-session-id"];
    let text: string | undefined;
    const route: RouteInput = {
      text: () => (text ??= promptText(request)),
      sessionKey: typeof sessionHeader === "string" && sessionHeader !== "" ? sessionHeader : request.user,
    };

    if (this.registry.topology === "aggregated") {
      const outcome = await this.upstreams.runLeg(exchange, {
        role: "server",
        model: request.model,
        path: request.path,
        headers,
        body: request.raw,
        route,
      });
      if ("failure" in outcome) return this.fail(exchange, outcome.failure);
      return this.upstreams.pipeToClient(exchange, outcome.leg);
    }

    const context: PdContext = {
      upstreams: this.upstreams,
      exchange,
      request,
      headers,
      route,
      fail: (failure) => this.fail(exchange, failure),
      maxAttempts: this.config.maxAttempts,
    };
    const requestId = legRequestId(exchange);
    const extraHeaders: Record<string, string> = {};
    if (plan.encode) {
      const encoder = await primeEncoder(context, requestId);
      if (encoder === undefined) return;
      extraHeaders["x-berth-encoder"] = encoder;
    }
    if (this.config.engine === "sglang") return serveSglangPd(context, requestId, extraHeaders);
    return serveVllmPd(context, requestId, extraHeaders);
  }

  /** What to do with a request given the current endpoints (see the module header). */
  private plan(request: InferenceRequest, media: boolean): Plan {
    const { registry } = this;
    if (registry.topology === "none") {
      if (registry.holdWhenEmpty) return { kind: "hold" };
      return { kind: "problem", problem: "unavailable", detail: "No endpoints are configured yet.", retryAfter: 5 };
    }
    if (!registry.hasModel(request.model) && !registry.modelsUncertain) {
      const listed = registry.models().map((card) => `"${card.id}"`).join(", ");
      return {
        kind: "problem",
        problem: "model-not-found",
        detail: `The model "${request.model}" is not served here; the models are ${listed || "none"}.`,
        pointer: "/model",
      };
    }
    const encode = media && registry.ofRole("encode").length > 0;
    const roles: Role[] =
      registry.topology === "aggregated" ? ["server"] : encode ? ["encode", "prefill", "decode"] : ["prefill", "decode"];
    for (const role of roles) {
      const configured = registry.ofRole(role);
      if (configured.length === 0) {
        if (registry.holdWhenEmpty) return { kind: "hold" };
        return { kind: "problem", problem: "unavailable", detail: `No ${role} endpoints are configured.`, retryAfter: 5 };
      }
      if (registry.candidates(role, request.model).length === 0) {
        const draining = configured.filter((endpoint) => endpoint.state === "draining").length;
        return {
          kind: "problem",
          problem: "unavailable",
          detail: `No eligible ${role} endpoint serves model "${request.model}" (${configured.length} configured, ${draining} draining).`,
          retryAfter: 2,
        };
      }
    }
    return { kind: "route", encode };
  }

  private fail(exchange: Exchange, failure: RouterFailure): void {
    this.problem(exchange, failure.kind, failure.detail, failure.headers ?? {});
  }

  private problem(
    exchange: Exchange,
    kind: ProblemKind,
    detail: string,
    headers: Record<string, string> = {},
    pointer?: string,
  ): void {
    if (exchange.res.headersSent || exchange.res.destroyed) return;
    sendError(exchange.res, kind, detail, { headers, pointer, instance: exchange.clientRequestId });
    this.metrics.response("", exchange.res.statusCode);
  }

  private refuseMethod(req: IncomingMessage, res: ServerResponse, allow: string): void {
    req.resume();
    sendError(res, "method-not-allowed", `Use ${allow} here.`, { headers: { allow }, instance: clientRequestId(req) });
  }

  private internalError(res: ServerResponse, error: unknown): void {
    this.logger.error({ err: error }, "router error");
    if (!res.headersSent) {
      sendError(res, "internal", "The router failed to handle the request; it has been logged.", { instance: clientRequestId(res.req) });
    } else res.destroy();
  }

  private settled(): void {
    this.active--;
    if (this.active === 0 && this.idle !== undefined) this.idle();
  }

  async listen(host: string, port: number): Promise<{ url: string; port: number }> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    const bound = (this.server.address() as AddressInfo).port;
    const shown = host.includes(":") ? `[${host}]` : host;
    return { url: `http://${shown}:${bound}`, port: bound };
  }

  async close(graceMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    this.hold.close();
    if (this.active > 0 && graceMs > 0) {
      await Promise.race([
        new Promise<void>((resolve) => (this.idle = resolve)),
        new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref()),
      ]);
    }
    this.server.closeAllConnections();
    this.admin.close();
    this.upstreams.close();
    await closed;
  }
}

/** The client's X-Request-Id, kept in error answers so its logs and ours join up. */
function clientRequestId(req: IncomingMessage): string | undefined {
  const id = req.headers["x-request-id"];
  return typeof id === "string" && id !== "" ? id : undefined;
}

export async function startRouter(options: RouterOptions): Promise<RunningRouter> {
  const router = new Router(options.config, options.logger, options.defaultMetrics ?? true);
  const { url, port } = await router.listen(options.config.host, options.config.port);
  return {
    url,
    port,
    registry: router.registry,
    admin: router.admin,
    close: (graceMs = 0) => router.close(graceMs),
  };
}
