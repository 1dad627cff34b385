// Disaggregated serving: a request's legs across encode, prefill and decode endpoints, in
// vLLM style (sequential, kv_transfer_params) or SGLang style (concurrent, bootstrap room).
import { randomBytes, randomUUID } from "node:crypto";
import type { OutgoingHttpHeaders } from "node:http";
import { DEFAULT_BOOTSTRAP_PORT, type Endpoint } from "./endpoints.ts";
import { Aborted, type Exchange } from "./exchange.ts";
import type { InferenceRequest } from "./openai-request.ts";
import type { RouteInput } from "./policies/index.ts";
import type { Leg, RouterFailure, Upstreams } from "./proxy.ts";

/** A prefill's non-streaming answer is one token; this bounds what we read of it. */
const PREFILL_ANSWER_CAP = 16 * 1024 * 1024;

/** The `kv_transfer_params` vLLM's NIXL connector expects on the prefill leg. */
export const PREFILL_KV_TRANSFER_PARAMS = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
} as const;

export interface PdContext {
  upstreams: Upstreams;
  exchange: Exchange;
  request: InferenceRequest;
  /** Client headers to forward (no content-length). */
  headers: OutgoingHttpHeaders;
  route: RouteInput;
  /** Answers the client with a router error. */
  fail(failure: RouterFailure): void;
  maxAttempts: number;
}

/** The one-token, non-streaming variant of a request (prefill and encoder legs). */
export function oneTokenBody(body: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...body, max_tokens: 1, stream: false };
  if ("max_completion_tokens" in body) copy.max_completion_tokens = 1;
  delete copy.stream_options;
  delete copy.min_tokens;
  delete copy.min_completion_tokens;
  return copy;
}

export function vllmPrefillBody(body: Record<string, unknown>): Record<string, unknown> {
  return { ...oneTokenBody(body), kv_transfer_params: { ...PREFILL_KV_TRANSFER_PARAMS } };
}

/** The request id shared by every leg: the client's X-Request-Id, else a new one. */
export function legRequestId(exchange: Exchange): string {
  return exchange.clientRequestId ?? randomUUID();
}

/**
 * EPD's first step, as vLLM's disaggregated-encoder proxy does it (examples/online_serving/
 * disaggregated_encoder/disagg_epd_proxy.py, fanout_encoder_primer): the request, with max_tokens 1
 * (max_completion_tokens 1 when given), stream false and no stream_options, to an encoder's
 * /v1/chat/completions under the same x-request-id; the encoder (ec_producer) answers once its
 * outputs are in the shared cache, so prefill (ec_consumer) finds them. Returns the encoder's id when the request should go on to
 * prefill/decode; undefined when the client has already been answered (a router error or
 * the encoder's error).
 */
export async function primeEncoder(context: PdContext, requestId: string): Promise<string | undefined> {
  const { upstreams, exchange, request } = context;
  const outcome = await upstreams.runLeg(exchange, {
    role: "encode",
    model: request.model,
    path: "/v1/chat/completions",
    headers: { ...context.headers, "content-type": "application/json", "x-request-id": requestId },
    body: JSON.stringify(oneTokenBody(request.body)),
    route: context.route,
  });
  if ("failure" in outcome) {
    context.fail(outcome.failure);
    return undefined;
  }
  if (!isSuccess(outcome.leg)) {
    await upstreams.pipeToClient(exchange, outcome.leg);
    return undefined;
  }
  await upstreams.readAll(exchange, outcome.leg, PREFILL_ANSWER_CAP);
  return outcome.leg.endpoint.id;
}

/**
 * vLLM style (NIXL): prefill with max_tokens 1, stream false and an empty
 * kv_transfer_params; then decode with the original body plus the params the prefill
 * returned (or unchanged without them), the same X-Request-Id on both legs.
 */
export async function serveVllmPd(context: PdContext, requestId: string, extraHeaders: Record<string, string>): Promise<void> {
  const { upstreams, exchange, request } = context;
  const headers = { ...context.headers, "content-type": "application/json", "x-request-id": requestId };
  const prefill = await upstreams.runLeg(exchange, {
    role: "prefill",
    model: request.model,
    path: request.path,
    headers,
    body: JSON.stringify(vllmPrefillBody(request.body)),
    route: context.route,
  });
  if ("failure" in prefill) return context.fail(prefill.failure);
  if (!isSuccess(prefill.leg)) return upstreams.pipeToClient(exchange, prefill.leg, extraHeaders);

  const prefillId = prefill.leg.endpoint.id;
  let kvTransferParams: unknown;
  try {
    const answer = await upstreams.readAll(exchange, prefill.leg, PREFILL_ANSWER_CAP);
    kvTransferParams = (JSON.parse(answer.toString("utf8")) as { kv_transfer_params?: unknown }).kv_transfer_params;
    if (typeof kvTransferParams !== "object" || kvTransferParams === null) throw new Error("no kv_transfer_params object");
  } catch (error) {
    if (error instanceof Aborted) throw error;
    // Without params the decode recomputes the prompt (vLLM's proxies do the same): slower, still correct.
    upstreams.noteBadPrefillAnswer(prefillId, (error as Error).message);
    kvTransferParams = undefined;
  }
  const decodeBody =
    kvTransferParams !== undefined ? JSON.stringify({ ...request.body, kv_transfer_params: kvTransferParams }) : request.raw;
  const decode = await upstreams.runLeg(exchange, {
    role: "decode",
    model: request.model,
    path: request.path,
    headers,
    body: decodeBody,
    route: context.route,
  });
  if ("failure" in decode) return context.fail(decode.failure);
  return upstreams.pipeToClient(exchange, decode.leg, { ...extraHeaders, "x-berth-prefill": prefillId });
}

/** A random bootstrap room in [0, 2^63 − 1], kept exact as a bigint (JSON numbers lose it past 2^53). */
export function newBootstrapRoom(): bigint {
  return randomBytes(8).readBigUInt64BE() & 0x7fff_ffff_ffff_ffffn;
}

/** The request body plus SGLang's bootstrap fields for a prefill endpoint, room written as an exact integer. */
export function sglangBody(body: Record<string, unknown>, prefill: Endpoint, room: bigint): string {
  const { bootstrap_host: _host, bootstrap_port: _port, bootstrap_room: _room, ...rest } = body;
  const json = JSON.stringify({
    ...rest,
    bootstrap_host: prefill.hostname,
    bootstrap_port: prefill.bootstrapPort ?? DEFAULT_BOOTSTRAP_PORT,
  });
  return `${json.slice(0, -1)},"bootstrap_room":${room.toString()}}`;
}

/**
 * SGLang style: prefill and decode get the same body plus bootstrap_host/port/room at
 * once, and the decode answer is the client's. A prefill that cannot be reached
 * cancels its decode (which would wait for a bootstrap that never comes) and the pair is
 * retried; a decode that fails before answering cancels its prefill and is retried too.
 */
export async function serveSglangPd(context: PdContext, requestId: string, extraHeaders: Record<string, string>): Promise<void> {
  const { upstreams, exchange, request } = context;
  const headers = { ...context.headers, "content-type": "application/json", "x-request-id": requestId };
  const triedPrefill: Endpoint[] = [];
  const triedDecode: Endpoint[] = [];
  let heldBack: Leg | undefined;
  let failure: RouterFailure | undefined;
  for (let attempt = 0; attempt < context.maxAttempts; attempt++) {
    const prefillPool = upstreams.pool({ role: "prefill", model: request.model }, triedPrefill);
    const decodePool = upstreams.pool({ role: "decode", model: request.model }, triedDecode);
    if (prefillPool.length === 0 || decodePool.length === 0) break;
    heldBack?.cancel();
    heldBack = undefined;
    const prefill = upstreams.choose("prefill", prefillPool, context.route);
    const decode = upstreams.choose("decode", decodePool, context.route);
    const body = sglangBody(request.body, prefill, newBootstrapRoom());
    const spec = { model: request.model, path: request.path, headers, body, route: context.route };
    const prefillScope = exchange.child();
    const decodeScope = exchange.child();
    let decodeAnswered = false;

    void upstreams.attempt(prefillScope, prefill, { ...spec, role: "prefill" }).then(
      (result) => {
        if (result.type === "ok") upstreams.drain(result.leg);
        else if (result.leg !== undefined) result.leg.cancel(); // its error shows up through the decode
        else if (!decodeAnswered) decodeScope.abort("cancelled");
      },
      () => {}, // aborted with the exchange or by us
    );
    let result;
    try {
      result = await upstreams.attempt(decodeScope, decode, { ...spec, role: "decode" });
    } catch (error) {
      if (!(error instanceof Aborted) || error.reason !== "cancelled" || exchange.aborted) throw error;
      triedPrefill.push(prefill);
      failure = { kind: "bad-gateway", detail: `The prefill endpoint ${prefill.id} could not be reached.` };
      continue;
    }
    if (result.type === "retryable") {
      prefillScope.abort("cancelled");
      triedDecode.push(decode);
      if (result.leg !== undefined) heldBack = result.leg;
      else failure = { kind: "bad-gateway", detail: `The decode endpoint ${decode.id} could not be reached: ${result.detail}.` };
      continue;
    }
    decodeAnswered = true;
    return upstreams.pipeToClient(exchange, result.leg, { ...extraHeaders, "x-berth-prefill": prefill.id });
  }
  if (heldBack !== undefined) return upstreams.pipeToClient(exchange, heldBack, extraHeaders);
  context.fail(
    failure ?? {
      kind: "unavailable",
      detail: `No eligible prefill/decode endpoint pair serves model "${request.model}".`,
      headers: { "retry-after": "2" },
    },
  );
}

function isSuccess(leg: Leg): boolean {
  return leg.status >= 200 && leg.status < 300;
}
