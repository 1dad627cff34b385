// Upstream legs: pick by policy, count in flight, send over keep-alive, retry elsewhere only
// before the client saw a byte; stream answers byte for byte with backpressure, cancel on
// client exit, and end a stream cut short cleanly (SSE error event or closed connection).
import http, { type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import https from "node:https";
import type { Logger } from "pino";
import type { RouterConfig } from "./config.ts";
import type { Endpoint, EndpointRegistry, Role } from "./endpoints.ts";
import { Aborted, type AbortScope, type Exchange } from "./exchange.ts";
import type { RouterMetrics, UpstreamErrorReason } from "./metrics.ts";
import type { Policy, RouteInput } from "./policies/index.ts";
import type { ProblemKind } from "./problem.ts";

/** vLLM's answer on every path while an elastic-EP resize runs. */
const SCALING_MESSAGE = "currently scaling";
const SCALING_FIRST_DELAY_MS = 250;
const SCALING_MAX_DELAY_MS = 2_000;
/** 5xx bodies up to this size are held back so the request can still go elsewhere. */
const ERROR_BODY_CAP = 64 * 1024;

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

export interface LegSpec {
  role: Role;
  model: string;
  /** Path under the endpoint's base URL, e.g. /v1/chat/completions. */
  path: string;
  /** Request headers, without content-length. */
  headers: OutgoingHttpHeaders;
  body: Buffer | string;
  route: RouteInput;
}

export interface RouterFailure {
  kind: ProblemKind;
  detail: string;
  headers?: Record<string, string>;
}

export type LegOutcome = { leg: Leg } | { failure: RouterFailure };

export type AttemptResult =
  | { type: "ok"; leg: Leg }
  /** A 5xx answer (held back, passed through if nothing better comes) or no answer at all. */
  | { type: "retryable"; reason: UpstreamErrorReason; leg?: Leg; detail: string };

/** One upstream request to one endpoint: counted in flight until released. */
export class Leg {
  /** Body chunks already read (a held-back 5xx answer); `bufferedComplete` when that is all of it. */
  buffered: Buffer[] | null = null;
  bufferedComplete = false;
  private released = false;

  constructor(
    readonly endpoint: Endpoint,
    readonly request: ClientRequest,
    readonly response: IncomingMessage,
    private readonly onRelease: () => void,
  ) {}

  get status(): number {
    return this.response.statusCode ?? 502;
  }

  /** The upstream is done with this request (or it was cancelled): stop counting it. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease();
  }

  /** Abandons the answer: cancels whatever is left of it and releases. */
  cancel(): void {
    if (!this.response.complete) this.request.destroy();
    this.release();
  }
}

export interface UpstreamsDeps {
  config: RouterConfig;
  registry: EndpointRegistry;
  policies: ReadonlyMap<Role, Policy>;
  metrics: RouterMetrics;
  logger: Logger;
}

export class Upstreams {
  readonly httpAgent: http.Agent;
  readonly httpsAgent: https.Agent;
  /** Access lines are logged at debug level only; the check is made once. */
  private readonly debug: boolean;

  constructor(private readonly deps: UpstreamsDeps) {
    this.debug = deps.logger.isLevelEnabled("debug");
    // Free sockets expire after 4 s, under uvicorn's 5 s keep-alive, so a reused socket is rarely stale.
    const agentOptions = { keepAlive: true, maxSockets: Infinity, maxFreeSockets: 512, timeout: 4_000, scheduling: "lifo" as const };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** Picks from `pool` (never empty) with the role's policy and records the decision. */
  choose(role: Role, pool: readonly Endpoint[], route: RouteInput): Endpoint {
    const policy = this.deps.policies.get(role)!;
    const pick = policy.pick(pool, route);
    const endpoint = pool[pick.index]!;
    this.deps.metrics.decision(role, policy.name, pick.decision, endpoint.id);
    return endpoint;
  }

  /**
   * Eligible endpoints of the leg's role, minus those already tried and those cooling down
   * after a failed connection — unless only cooling ones are left, which are then tried anyway.
   */
  pool(spec: Pick<LegSpec, "role" | "model">, tried: readonly Endpoint[]): readonly Endpoint[] {
    const all = this.deps.registry.candidates(spec.role, spec.model);
    const untried = tried.length === 0 ? all : all.filter((endpoint) => !tried.includes(endpoint));
    const now = performance.now();
    for (const endpoint of untried) {
      if (endpoint.unreachableUntil > now) {
        const reachable = untried.filter((candidate) => candidate.unreachableUntil <= now);
        return reachable.length > 0 ? reachable : untried;
      }
    }
    return untried; // the common case: the registry's cached array, unchanged
  }

  /**
   * Runs one leg with retries on other endpoints: up to `maxAttempts` tries while eligible
   * endpoints remain. A final 5xx answer is returned as a leg (it passes through); when no
   * endpoint answered at all, a router failure. Rejects with Aborted.
   */
  async runLeg(scope: AbortScope, spec: LegSpec): Promise<LegOutcome> {
    const tried: Endpoint[] = [];
    let heldBack: Leg | undefined;
    let failure: RouterFailure | undefined;
    let previous: { endpoint: Endpoint; reason: UpstreamErrorReason } | undefined;
    for (let attempt = 0; attempt < this.deps.config.maxAttempts; attempt++) {
      const pool = this.pool(spec, tried);
      if (pool.length === 0) break;
      if (previous !== undefined) this.deps.metrics.retry(previous.endpoint.id, previous.reason);
      heldBack?.cancel();
      heldBack = undefined;
      const endpoint = this.choose(spec.role, pool, spec.route);
      tried.push(endpoint);
      const result = await this.attempt(scope, endpoint, spec);
      if (result.type === "ok") return { leg: result.leg };
      previous = { endpoint, reason: result.reason };
      if (result.leg !== undefined) heldBack = result.leg;
      else if (result.reason === "scaling") {
        failure = { kind: "unavailable", detail: `No ${spec.role} endpoint could take the request: ${result.detail}.`, headers: { "retry-after": "5" } };
      } else failure = { kind: "bad-gateway", detail: `No ${spec.role} endpoint could be reached (last: ${endpoint.id}: ${result.detail}).` };
    }
    if (heldBack !== undefined) return { leg: heldBack };
    return {
      failure: failure ?? {
        kind: "unavailable",
        detail: `No eligible ${spec.role} endpoint serves model "${spec.model}".`,
        headers: { "retry-after": "2" },
      },
    };
  }

  /**
   * One try on one endpoint. The endpoint counts the request in flight from here until the
   * returned leg is released (or at once on a failure without a leg). Rejects with Aborted.
   */
  async attempt(scope: AbortScope, endpoint: Endpoint, spec: LegSpec): Promise<AttemptResult> {
    const { metrics, config, registry, logger } = this.deps;
    endpoint.inFlight++;
    let counted = true;
    const uncount = () => {
      if (counted) {
        counted = false;
        endpoint.inFlight--;
      }
    };
    let scalingUntil: number | undefined;
    let delay = SCALING_FIRST_DELAY_MS;
    let resetRetried = false;
    try {
      for (;;) {
        const request = this.send(endpoint, spec);
        const unregister = scope.onAbort((reason) => request.destroy(new Aborted(reason)));
        let response: IncomingMessage;
        try {
          response = await responseOf(request);
        } catch (error) {
          unregister();
          if (scope.abortReason !== undefined) throw new Aborted(scope.abortReason);
          // A keep-alive socket the server closed just as we reused it: one quiet retry.
          if (request.reusedSocket && (error as NodeJS.ErrnoException).code === "ECONNRESET" && !resetRetried) {
            resetRetried = true;
            continue;
          }
          metrics.upstreamError(endpoint.id, "connect");
          logger.warn({ endpoint: endpoint.id, err: (error as Error).message }, "upstream unreachable");
          endpoint.unreachableUntil = performance.now() + config.unreachableCooldownMs;
          uncount();
          return { type: "retryable", reason: "connect", detail: (error as Error).message };
        }
        const leg = new Leg(endpoint, request, response, () => {
          unregister();
          uncount();
        });
        if (leg.status < 500) return { type: "ok", leg };
        const body = await collect(response, ERROR_BODY_CAP, scope);
        leg.buffered = body.chunks;
        leg.bufferedComplete = body.complete;
        if (body.closed) {
          leg.release();
          metrics.upstreamError(endpoint.id, "connect", leg.status);
          return { type: "retryable", reason: "connect", detail: "the connection closed during an error answer" };
        }
        if (leg.status === 503 && body.complete && config.scalingRetryMs > 0 && isScalingAnswer(body.chunks)) {
          const now = performance.now();
          scalingUntil ??= now + config.scalingRetryMs;
          metrics.upstreamError(endpoint.id, "scaling", 503);
          if (now + delay <= scalingUntil && registry.contains(endpoint)) {
            unregister(); // the answer is complete: the socket is back in the pool
            await scope.sleep(delay);
            delay = Math.min(delay * 2, SCALING_MAX_DELAY_MS);
            continue;
          }
          // Still resizing at the end of the bounded wait: the router's own 503 with Retry-After
          // (unless another endpoint serves it), not the engine's bare answer.
          leg.release();
          const waited = Math.round((config.scalingRetryMs - (scalingUntil - now)) / 1000);
          return { type: "retryable", reason: "scaling", detail: `${endpoint.id} was still resizing after ${waited} s` };
        }
        metrics.upstreamError(endpoint.id, "status_5xx", leg.status);
        return { type: "retryable", reason: "status_5xx", leg, detail: `HTTP ${leg.status}` };
      }
    } catch (error) {
      uncount();
      throw error;
    }
  }

  /**
   * Streams a leg's answer to the client: status and headers (minus hop-by-hop ones) plus
   * x-berth-upstream, then the body byte for byte. Resolves when the client's response is
   * closed, however that happened.
   */
  pipeToClient(exchange: Exchange, leg: Leg, extraHeaders: Record<string, string> = {}): Promise<void> {
    const { metrics } = this.deps;
    const { res } = exchange;
    const upstream = leg.response;
    const endpointId = leg.endpoint.id;
    const status = leg.status;
    const headers: string[] = [];
    let sse = false;
    let hasLength = false;
    const raw = upstream.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower)) continue;
      if (lower === "content-type" && raw[i + 1]!.startsWith("text/event-stream")) sse = true;
      else if (lower === "content-length") hasLength = true;
      headers.push(name, raw[i + 1]!);
    }
    headers.push("x-berth-upstream", endpointId);
    for (const name in extraHeaders) headers.push(name, extraHeaders[name]!);
    res.sendDate = false; // the upstream's Date (if any) passes through
    res.writeHead(status, headers);

    return new Promise<void>((resolve) => {
      let ended = false;
      let firstByte = true;
      let tail1 = 0;
      let tail2 = 0;
      const noteFirstByte = () => {
        if (!firstByte) return;
        firstByte = false;
        metrics.firstByte(endpointId, (performance.now() - exchange.arrivedAt) / 1000);
      };
      res.once("close", () => {
        leg.cancel();
        const seconds = (performance.now() - exchange.arrivedAt) / 1000;
        metrics.response(endpointId, status);
        metrics.finished(endpointId, seconds);
        if (this.debug) this.deps.logger.debug({ endpoint: endpointId, status, ms: Math.round(seconds * 1000), complete: res.writableFinished }, "request");
        resolve();
      });
      if (leg.buffered !== null) {
        for (const chunk of leg.buffered) res.write(chunk);
        if (leg.buffered.length > 0) noteFirstByte();
        if (leg.bufferedComplete) {
          ended = true;
          leg.release();
          res.end();
          return;
        }
      }
      const fail = () => {
        if (ended) return;
        ended = true;
        upstream.off("data", onData);
        leg.cancel();
        if (res.destroyed || exchange.abortReason === "client") return;
        const timedOut = exchange.abortReason === "timeout";
        metrics.upstreamError(endpointId, timedOut ? "timeout" : "mid_stream", status);
        this.deps.logger.warn({ endpoint: endpointId, timedOut }, "upstream answer cut short");
        if (sse && !hasLength) {
          const separator = tail2 !== 10 ? "\n\n" : tail1 !== 10 ? "\n" : "";
          const message = timedOut
            ? "The request timed out before the upstream finished its answer."
            : `The upstream ${endpointId} closed the stream before it finished.`;
          res.end(`${separator}data: ${JSON.stringify({ error: { message, type: "upstream_error", code: timedOut ? 504 : 502 } })}\n\n`);
        } else {
          res.destroy(); // the client sees an incomplete body, never a silent truncation
        }
      };
      const onData = (chunk: Buffer) => {
        noteFirstByte();
        if (chunk.length >= 2) {
          tail1 = chunk[chunk.length - 2]!;
          tail2 = chunk[chunk.length - 1]!;
        } else if (chunk.length === 1) {
          tail1 = tail2;
          tail2 = chunk[0]!;
        }
        if (!res.write(chunk)) upstream.pause();
      };
      upstream.on("data", onData);
      res.on("drain", () => upstream.resume());
      upstream.once("end", () => {
        if (ended) return;
        ended = true;
        leg.release();
        res.end();
      });
      upstream.once("close", () => {
        if (!upstream.complete) fail();
      });
      upstream.on("error", () => fail());
      if (upstream.isPaused()) upstream.resume();
    });
  }

  /** A prefill answered 2xx without usable kv_transfer_params: the decode will recompute. */
  noteBadPrefillAnswer(endpointId: string, reason: string): void {
    this.deps.metrics.upstreamError(endpointId, "bad_prefill_answer", 200);
    this.deps.logger.warn({ endpoint: endpointId, reason }, "prefill answer without kv_transfer_params");
  }

  /** Reads a whole answer (bounded) and releases the leg. Rejects with Aborted, or an Error past the cap. */
  async readAll(scope: AbortScope, leg: Leg, cap: number): Promise<Buffer> {
    try {
      const body = await collect(leg.response, cap, scope);
      if (!body.complete) throw new Error(body.closed ? "the upstream closed the connection mid-answer" : `the answer exceeds ${cap} bytes`);
      return Buffer.concat(body.chunks);
    } finally {
      leg.cancel();
    }
  }

  /** Lets an answer run to its end unread (an SGLang prefill leg), releasing the leg then. */
  drain(leg: Leg): void {
    const upstream = leg.response;
    upstream.once("end", () => leg.release());
    upstream.once("close", () => leg.cancel());
    upstream.on("error", () => leg.cancel());
    upstream.resume();
  }

  private send(endpoint: Endpoint, spec: LegSpec): ClientRequest {
    const request = this.open(endpoint, spec);
    // A new connection must open within the connect timeout (a reused one is already open).
    request.once("socket", (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(
        () => request.destroy(new ConnectTimeout(`no connection within ${this.deps.config.connectTimeoutMs} ms`)),
        this.deps.config.connectTimeoutMs,
      );
      socket.once("connect", () => clearTimeout(timer));
      socket.once("close", () => clearTimeout(timer));
    });
    request.end(spec.body);
    return request;
  }

  private open(endpoint: Endpoint, spec: LegSpec): ClientRequest {
    const secure = endpoint.protocol === "https:";
    const headers: OutgoingHttpHeaders = { ...spec.headers, "content-length": Buffer.byteLength(spec.body) };
    const request = (secure ? https : http).request({
      agent: secure ? this.httpsAgent : this.httpAgent,
      host: endpoint.socketHost,
      port: endpoint.port,
      method: "POST",
      path: endpoint.basePath + spec.path,
      headers,
    });
    request.on("error", noop); // errors are read through responseOf and the response's close
    return request;
  }
}

class ConnectTimeout extends Error {
  readonly code = "ETIMEDOUT";
}

function noop(): void {}

function responseOf(request: ClientRequest): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    request.once("response", resolve);
    request.once("error", reject);
  });
}

interface Collected {
  chunks: Buffer[];
  /** The whole answer was read. */
  complete: boolean;
  /** The connection closed before the answer ended. */
  closed: boolean;
}

/** Reads an answer until its end, `cap` bytes (then pauses it), or its connection closes. */
function collect(response: IncomingMessage, cap: number, scope: AbortScope): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let unregister = noop;
    const finish = (result: Collected | Aborted) => {
      response.off("data", onData);
      response.off("end", onEnd);
      response.off("close", onClose);
      unregister();
      if (result instanceof Aborted) reject(result);
      else resolve(result);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > cap) {
        response.pause();
        finish({ chunks, complete: false, closed: false });
      }
    };
    const onEnd = () => finish({ chunks, complete: true, closed: false });
    const onClose = () => {
      if (scope.abortReason !== undefined) finish(new Aborted(scope.abortReason));
      else finish({ chunks, complete: response.complete, closed: !response.complete });
    };
    response.on("data", onData);
    response.once("end", onEnd);
    response.once("close", onClose);
    response.on("error", noop);
    unregister = scope.onAbort((reason) => finish(new Aborted(reason)));
  });
}

function isScalingAnswer(chunks: Buffer[]): boolean {
  return Buffer.concat(chunks).toString("utf8").includes(SCALING_MESSAGE);
}

/** Client headers worth forwarding: all but hop-by-hop ones, host and content-length. */
export function forwardHeaders(headers: http.IncomingHttpHeaders): OutgoingHttpHeaders {
  const forwarded: OutgoingHttpHeaders = {};
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || name === "host" || name === "content-length" || name === "expect") continue;
    forwarded[name] = headers[name];
  }
  return forwarded;
}
