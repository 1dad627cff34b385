// One /v1/completions or /v1/chat/completions request from body to answer: validation as the engine
// does it, tokenization and length limits, DP rank placement, the PD legs, submission to the
// scheduler, and the answer — one JSON body, or SSE chunks as tokens come out of the model steps.
// A client that disconnects aborts its request, which leaves the running batch at once.
import { randomUUID } from "node:crypto";
import type { Context } from "hono";
import type { FinishReason } from "./engine-scheduler.ts";
import {
  completeResponse,
  DONE,
  errorBody,
  invalidJson,
  readGenerateBody,
  RequestError,
  streamChunk,
  usage,
  usageChunk,
  type Endpoint,
  type GenerateBody,
  type ResponseContext,
} from "./openai.ts";
import { encodeMs, loadEncoderCache, placeholderIds, readMedia, saveEncoderCache, type MediaItem } from "./encoder.ts";
import { fetchPrefilledKv, kvTransferMs, prefillAnswerParams, readRemotePrefill, wantsRemoteDecode } from "./pd.ts";
import type { SimRuntime } from "./runtime.ts";
import { blockHashes, planGeneration, promptKey, tokenize } from "./tokens.ts";

export function errorResponse(rt: SimRuntime, error: RequestError): Response {
  return Response.json(errorBody(rt.args.flavour, error.status, error.message, error.type, error.param), { status: error.status });
}

interface Prepared {
  body: GenerateBody;
  /** The chat body's images (vLLM flavour), each counted in promptTokens. */
  media: MediaItem[];
  promptTokens: number;
  ids: number[];
  rank: number;
  maxTokens: number;
}

function prepare(rt: SimRuntime, endpoint: Endpoint, json: unknown, rankHeader: string | undefined): Prepared {
  const body = readGenerateBody(endpoint, json);
  const { args } = rt;
  if (args.flavour === "vllm" && body.model && !rt.env.skipModelNameValidation && !args.servedModelNames.includes(body.model)) {
    throw new RequestError(404, `The model \`${body.model}\` does not exist.`, "NotFoundError", "model");
  }
  const limit = rt.maxModelLen;
  let ids: number[];
  let count: number;
  if (body.promptIds) {
    ids = body.promptIds;
    count = ids.length;
  } else {
    ({ ids, count } = tokenize(body.promptText ?? "", limit + 1));
  }
  // Each image takes its placeholder tokens in the prompt (vLLM counts them in prompt_tokens);
  // their ids follow the mm_hash, so a repeated image is a prefix-cache hit as in vLLM.
  const media = args.flavour === "vllm" && endpoint === "chat" ? readMedia(args.model, json) : [];
  for (const item of media) {
    ids = [...ids, ...placeholderIds(item)];
    count += item.tokens;
  }
  if (count >= limit) {
    throw new RequestError(
      400,
      args.flavour === "vllm"
        ? `This model's maximum context length is ${limit} tokens. However, your request has ${count} input tokens. Please reduce the length of the input messages.`
        : `The input (${count} tokens) is longer than the model's context length (${limit} tokens).`,
    );
  }
  if (body.maxTokens !== undefined && count + body.maxTokens > limit) {
    throw new RequestError(
      400,
      `'max_tokens' or 'max_completion_tokens' is too large: ${body.maxTokens}. This model's maximum context length is ${limit} tokens and your request has ${count} input tokens (${body.maxTokens} > ${limit} - ${count}).`,
    );
  }
  const pinned = readRank(rt, args.flavour === "vllm" ? rankHeader : body.dataParallelRank);
  if (!rt.core.fits(count)) {
    throw new RequestError(400, `The prompt (${count} tokens) does not fit in the KV cache (${rt.perf.kvCapacityTokens} tokens).`);
  }
  return { body, media, promptTokens: count, ids, rank: rt.core.pickRank(pinned), maxTokens: body.maxTokens ?? limit - count };
}

/** `X-data-parallel-rank` (vLLM) or `routed_dp_rank` / `data_parallel_rank` (SGLang) pins the rank. */
function readRank(rt: SimRuntime, raw: string | number | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const rank = typeof raw === "number" ? raw : /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(rank)) throw new RequestError(400, `Invalid data parallel rank: ${raw}`);
  if (!rt.core.hasRank(rank)) {
    const ids = rt.core.rankIds;
    const range = ids.length === 1 && ids[0] !== 0 ? `[${ids[0]}, ${ids[0]! + 1})` : `[0, ${rt.core.size})`;
    throw new RequestError(400, `data_parallel_rank ${rank} is out of range ${range}.`);
  }
  return rank;
}

/** Where generation stops: the seeded "model" ends on its own, unless max_tokens or ignore_eos decide. */
function outputPlan(rt: SimRuntime, prepared: Prepared): { tokens: number; reason: "stop" | "length"; piece: (index: number) => string } {
  const { body } = prepared;
  const seedKey = body.temperature === 0 ? `greedy:${promptKey(prepared.ids)}` : `${rt.sim.seed}:${body.seed ?? "-"}:${promptKey(prepared.ids)}`;
  const generation = planGeneration(seedKey);
  const natural = body.ignoreEos ? Number.POSITIVE_INFINITY : Math.max(generation.naturalLength, body.minTokens);
  const tokens = Math.max(1, Math.min(natural, prepared.maxTokens));
  return { tokens, reason: natural < prepared.maxTokens ? "stop" : "length", piece: generation.piece };
}

export async function handleGenerate(rt: SimRuntime, endpoint: Endpoint, c: Context): Promise<Response> {
  if (rt.phase === "draining" && rt.args.flavour === "vllm") {
    // vLLM rejects new requests while draining for --shutdown-timeout.
    return errorResponse(rt, new RequestError(503, "The engine is shutting down and does not accept new requests.", "ServiceUnavailableError"));
  }
  let json: unknown;
  try {
    json = JSON.parse(await c.req.text());
  } catch {
    return errorResponse(rt, invalidJson());
  }
  let prepared: Prepared;
  try {
    prepared = prepare(rt, endpoint, json, c.req.header("x-data-parallel-rank"));
  } catch (error) {
    if (error instanceof RequestError) return errorResponse(rt, error);
    throw error;
  }
  const requestId = c.req.header("x-request-id") || randomUUID().replaceAll("-", "");
  const headers: Record<string, string> = {};
  if (rt.args.enableRequestIdHeaders && c.req.header("x-request-id")) headers["x-request-id"] = requestId;
  const ctx: ResponseContext = {
    flavour: rt.args.flavour,
    endpoint,
    id: `${endpoint === "chat" ? "chatcmpl" : "cmpl"}-${requestId}`,
    created: Math.floor(Date.now() / 1000),
    model: rt.modelName,
  };
  return new GenerateRun(rt, prepared, ctx, requestId, c.req.raw.signal, headers).start();
}

/** The life of one request: PD preparation, scheduling, and its answer. */
class GenerateRun {
  private readonly arrivedAt = Date.now();
  private readonly plan: ReturnType<typeof outputPlan>;
  private generated = 0;
  private cachedTokens = 0;
  private scheduledAt?: number;
  private lastTokenAt?: number;
  private text = "";
  private finished?: FinishReason;
  private abortRequest: () => void = () => {};
  private readonly controller = new AbortController();
  private kvAnswer: Record<string, unknown> | null = null;
  /** EC producer: the items to save once the encoder ran. */
  private saveMedia: MediaItem[] = [];
  /** Model-ms of encoding done here, inside the first prefill step. */
  private localEncodeMs?: number;
  private sglangRoom?: string;
  /** Resolves the request's place in `runtime.inFlight` once its answer is complete. */
  private onDone: () => void = () => {};
  /** Set by the streaming answer: each new token's text. */
  private onChunk?: (chunk: string) => void;
  /** Set by the answer: called once the scheduler finished (or aborted) the request. */
  private afterFinish?: () => void;

  constructor(
    private readonly rt: SimRuntime,
    private readonly prepared: Prepared,
    private readonly ctx: ResponseContext,
    private readonly requestId: string,
    clientSignal: AbortSignal,
    private readonly headers: Record<string, string>,
  ) {
    this.plan = outputPlan(rt, prepared);
    const { args } = rt;
    const room = prepared.body.bootstrapRoom;
    if (args.flavour === "sglang" && args.disaggregationMode === "prefill" && room !== undefined) {
      // The prefill half of an SGLang PD pair computes the prompt and hands its KV over: one token.
      this.sglangRoom = String(room);
      this.plan = { ...this.plan, tokens: 1, reason: "length" };
    }
    if (clientSignal.aborted) this.controller.abort();
    else clientSignal.addEventListener("abort", () => this.controller.abort(), { once: true });
  }

  async start(): Promise<Response> {
    const entry = { abort: () => this.controller.abort() };
    this.rt.inFlight.add(entry);
    const done = new Promise<void>((resolve) => {
      this.onDone = resolve;
    });
    void done.then(() => this.rt.inFlight.delete(entry));
    this.controller.signal.addEventListener("abort", () => this.abortRequest(), { once: true });
    let remotePrefillMs = await this.preparePd();
    const encoder = this.prepareMedia(remotePrefillMs !== undefined);
    if (encoder?.instead !== undefined) remotePrefillMs = encoder.instead;
    this.localEncodeMs = encoder?.local;
    if (this.controller.signal.aborted) {
      this.finish("abort");
      this.onDone();
      return new Response(null, { status: 499 });
    }
    return this.prepared.body.stream ? this.streamAnswer(remotePrefillMs) : this.jsonAnswer(remotePrefillMs);
  }

  /**
   * The request's images. An EC producer (the encoder) encodes them and skips the language
   * model: the returned model-ms stand in for the prefill, and its files are written when the
   * first (dummy) token is out — vLLM's producer runs only `_execute_mm_encoder` and answers
   * with placeholder tokens (vllm/v1/worker/gpu_model_runner.py, make_empty_encoder_model_runner_output).
   * A consumer loads what the encoder saved and encodes only the misses; an engine without EC
   * encodes everything; a decode whose KV came from its prefill needs no encoder at all. `instead`
   * replaces the prefill (producer); `local` is the encoder's model-ms, run in the GPU's steps
   * (engine-scheduler.ts `encodeMs`).
   */
  private prepareMedia(kvFromPrefill: boolean): { instead?: number; local?: number } | undefined {
    const { rt, prepared } = this;
    const { media } = prepared;
    if (media.length === 0 || kvFromPrefill) return undefined;
    const ec = rt.ec;
    if (ec?.role === "ec_producer") {
      const fresh = media.filter((item) => loadEncoderCache(ec.storagePath, item.hash) === undefined);
      this.saveMedia = fresh;
      rt.log.info({ requestId: this.requestId, items: media.length, encoded: fresh.length }, "berth-sim: encoder request");
      // No language-model prefill (a token's worth of "transfer"); the ViT runs in the GPU's steps.
      return { instead: 0.001, local: encodeMs(rt.perf, fresh.reduce((sum, item) => sum + item.tokens, 0)) };
    }
    const misses = ec ? media.filter((item) => loadEncoderCache(ec.storagePath, item.hash) === undefined) : media;
    if (ec && misses.length > 0) {
      rt.log.warn(
        { requestId: this.requestId, misses: misses.map((item) => item.hash), storagePath: ec.storagePath },
        "berth-sim: encoder cache miss; encoding locally as vLLM's scheduler does",
      );
    }
    return { local: encodeMs(rt.perf, misses.reduce((sum, item) => sum + item.tokens, 0)) };
  }

  /** Returns the model-ms KV transfer when the prompt's KV comes from a prefill server. */
  private async preparePd(): Promise<number | undefined> {
    const { rt, prepared } = this;
    const { body, promptTokens, rank } = prepared;
    if (rt.args.flavour === "vllm") {
      if (!rt.nixl) return undefined;
      const remote = readRemotePrefill(body.kvTransferParams);
      if (remote.kind === "invalid") rt.log.warn({ requestId: this.requestId }, "berth-sim: Got invalid KVTransferParams; computing the prompt locally");
      rt.metrics.externalKvLookup(rank, promptTokens, remote.kind === "valid" ? promptTokens : 0);
      return remote.kind === "valid" ? kvTransferMs(rt.perf, promptTokens) : undefined;
    }
    if (rt.args.disaggregationMode !== "decode") return undefined;
    const room = body.bootstrapRoom;
    const host = body.bootstrapHost;
    if (room === undefined || host === undefined) {
      rt.metrics.pdFailure("bootstrap");
      rt.log.warn({ requestId: this.requestId }, "berth-sim: decode request without bootstrap_host/bootstrap_room; computing the prompt locally");
      return undefined;
    }
    const counters = rt.core.counters(rank);
    counters.decodePreallocQueue++;
    const port = body.bootstrapPort ?? rt.args.bootstrapPort;
    const remoteTokens = await fetchPrefilledKv(host, port, String(room), rt.env.pdWaitingTimeoutS * 1000, this.controller.signal);
    counters.decodePreallocQueue--;
    if (remoteTokens === undefined) {
      if (!this.controller.signal.aborted) {
        rt.metrics.pdFailure("bootstrap");
        rt.log.warn({ requestId: this.requestId, bootstrapHost: host, bootstrapPort: port, room }, "berth-sim: no prefill KV for this bootstrap room; computing the prompt locally");
      }
      return undefined;
    }
    return kvTransferMs(rt.perf, promptTokens);
  }

  private submit(remotePrefillMs: number | undefined): void {
    const { rt, prepared } = this;
    // An elastic resize during a PD wait may have removed the chosen rank.
    if (!rt.core.hasRank(prepared.rank)) prepared.rank = rt.core.pickRank();
    const handle = rt.core.submit(prepared.rank, {
      id: this.requestId,
      promptTokens: prepared.promptTokens,
      blockHashes: blockHashes(prepared.ids, rt.perf.shape.blockSize),
      outputTokens: this.plan.tokens,
      finishReason: this.plan.reason,
      remotePrefillMs,
      ...(this.localEncodeMs && { encodeMs: this.localEncodeMs }),
      listener: {
        onScheduled: ({ cachedTokens, atMs }) => {
          this.cachedTokens = cachedTokens;
          this.scheduledAt = atMs;
        },
        onToken: (index, atMs) => this.onToken(index, atMs),
        onFinish: (reason, atMs) => this.onFinish(reason, atMs),
      },
    });
    this.abortRequest = () => handle.abort();
  }

  private onToken(index: number, atMs: number): void {
    const { rt, prepared } = this;
    const piece = this.plan.piece(index);
    this.text += piece;
    this.generated = index + 1;
    if (index === 0) {
      if (rt.ec && this.saveMedia.length > 0) {
        try {
          for (const item of this.saveMedia) saveEncoderCache(rt.ec.storagePath, item, rt.perf.model.queryHeads * rt.perf.model.headDim);
        } catch (error) {
          // The prefill will miss and encode these itself; the request still answers.
          rt.log.error({ requestId: this.requestId, storagePath: rt.ec.storagePath, error: (error as Error).message }, "berth-sim: could not save encoder outputs");
        }
        this.saveMedia = [];
      }
      rt.metrics.firstToken(prepared.rank, Math.max(0, atMs - this.arrivedAt) / 1000);
      if (this.sglangRoom !== undefined) {
        rt.rooms?.ready(this.sglangRoom, prepared.promptTokens);
      }
    } else if (this.lastTokenAt !== undefined) {
      rt.metrics.interToken(prepared.rank, Math.max(0, atMs - this.lastTokenAt) / 1000);
    }
    this.lastTokenAt = atMs;
    this.onChunk?.(piece);
  }

  private onFinish(reason: FinishReason, atMs: number): void {
    const { rt, prepared } = this;
    if (reason !== "abort" && rt.nixl && wantsRemoteDecode(prepared.body.kvTransferParams) && !prepared.body.stream) {
      this.kvAnswer = prefillAnswerParams(rt.nixl, prepared.rank, this.requestId, prepared.promptTokens, rt.perf.shape.blockSize);
    }
    rt.metrics.requestFinished({
      rank: prepared.rank,
      promptTokens: prepared.promptTokens,
      generationTokens: this.generated,
      cachedTokens: this.cachedTokens,
      e2eSeconds: Math.max(0, atMs - this.arrivedAt) / 1000,
      queueSeconds: Math.max(0, (this.scheduledAt ?? atMs) - this.arrivedAt) / 1000,
      reason,
    });
    this.finish(reason);
  }

  private finish(reason: FinishReason): void {
    if (this.finished) return;
    this.finished = reason;
    this.afterFinish?.();
  }

  private usage() {
    const details = this.rt.args.enablePromptTokensDetails ? this.cachedTokens : undefined;
    return usage(this.prepared.promptTokens, this.generated, details);
  }

  /** SGLang prefill: hold the answer until the decode side took the KV (or the bootstrap timeout). */
  private async handOver(): Promise<void> {
    if (this.sglangRoom === undefined || !this.rt.rooms || this.finished === "abort") return;
    const counters = this.rt.core.counters(this.prepared.rank);
    counters.prefillInflightQueue++;
    const taken = await this.rt.rooms.waitForFetch(this.sglangRoom, this.rt.env.pdBootstrapTimeoutS * 1000);
    counters.prefillInflightQueue--;
    if (!taken) this.rt.log.warn({ room: this.sglangRoom }, "berth-sim: no decode server took this room's KV before the bootstrap timeout");
  }

  private async jsonAnswer(remotePrefillMs: number | undefined): Promise<Response> {
    const finished = new Promise<void>((resolve) => (this.afterFinish = resolve));
    this.submit(remotePrefillMs);
    await finished;
    await this.handOver();
    this.onDone();
    if (this.controller.signal.aborted) return new Response(null, { status: 499 });
    const body = completeResponse(this.ctx, this.text, this.finished ?? "abort", this.usage(), this.kvAnswer);
    return Response.json(body, { headers: this.headers });
  }

  private streamAnswer(remotePrefillMs: number | undefined): Response {
    const { ctx } = this;
    const { includeUsage, continuousUsage } = this.prepared.body;
    const encoder = new TextEncoder();
    let closed = false;
    let pending: string | undefined;
    let flushScheduled = false;
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const write = (text: string) => {
      if (!closed) controller.enqueue(encoder.encode(text));
    };
    // A token's chunk goes out at the end of the current microtask run, so the last token and its
    // finish_reason share one chunk, as the engines send them.
    const flush = () => {
      flushScheduled = false;
      if (pending === undefined) return;
      const text = pending;
      pending = undefined;
      write(streamChunk(ctx, { text, finishReason: null }, continuousUsage ? this.usage() : undefined));
    };
    this.onChunk = (piece) => {
      if (this.generated === 1 && ctx.endpoint === "chat") write(streamChunk(ctx, { role: true }));
      if (pending !== undefined) flush();
      pending = piece;
      if (!flushScheduled) {
        flushScheduled = true;
        queueMicrotask(flush);
      }
    };
    this.afterFinish = () => {
      const text = pending;
      pending = undefined;
      void this.handOver().then(() => {
        this.onDone();
        if (closed) return;
        const finishReason = this.finished ?? "abort";
        if (this.generated === 0 && ctx.endpoint === "chat") write(streamChunk(ctx, { role: true }));
        write(streamChunk(ctx, { text: text ?? (ctx.endpoint === "chat" ? undefined : ""), finishReason }, continuousUsage ? this.usage() : undefined));
        if (includeUsage) write(usageChunk(ctx, this.usage()));
        write(DONE);
        closed = true;
        controller.close();
      });
    };
    const stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
      },
      cancel: () => {
        closed = true;
        this.controller.abort();
      },
    });
    this.submit(remotePrefillMs);
    return new Response(stream, {
      headers: { ...this.headers, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
    });
  }
}
