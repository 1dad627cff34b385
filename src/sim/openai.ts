// The OpenAI-compatible wire format as vLLM and SGLang speak it: reading /v1/completions and
// /v1/chat/completions bodies (with their validation errors), and writing responses, SSE chunks and
// each engine's error envelope. No engine state here.
import type { Flavour } from "./args.ts";
import { renderChat, type ChatMessage } from "./tokens.ts";

export type Endpoint = "chat" | "completion";

export interface GenerateBody {
  endpoint: Endpoint;
  model?: string;
  /** Prompt as text (chat messages rendered through the template), or as token ids. */
  promptText?: string;
  promptIds?: number[];
  maxTokens?: number;
  minTokens: number;
  ignoreEos: boolean;
  stream: boolean;
  includeUsage: boolean;
  continuousUsage: boolean;
  seed?: number;
  temperature?: number;
  /** vLLM NIXL: `{ do_remote_decode: true }` on the prefill leg, the prefill's answer on the decode leg. */
  kvTransferParams?: Record<string, unknown>;
  /** SGLang PD pairing. */
  bootstrapHost?: string;
  bootstrapPort?: number | null;
  bootstrapRoom?: number;
  /** SGLang DP pinning in the body. */
  dataParallelRank?: number;
}

export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = status === 404 ? "NotFoundError" : status === 400 ? "BadRequestError" : "InternalServerError",
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** The engine's error body: vLLM nests it under `error`, SGLang's ErrorResponse is flat. */
export function errorBody(flavour: Flavour, status: number, message: string, type: string, param: string | null = null): Record<string, unknown> {
  if (flavour === "sglang") return { object: "error", message, type, param, code: status };
  return { error: { message, type, param, code: status } };
}

/** pydantic's validation error, as FastAPI reports it and both engines pass it on as a 400. */
function validationMessage(type: string, loc: (string | number)[], msg: string): string {
  const where = loc.map((part) => (typeof part === "number" ? String(part) : `'${part}'`)).join(", ");
  return `[{'type': '${type}', 'loc': (${where}), 'msg': '${msg}'}]`;
}

export function invalidJson(): RequestError {
  return new RequestError(400, validationMessage("json_invalid", ["body", 0], "JSON decode error"));
}

function missing(field: string): RequestError {
  return new RequestError(400, validationMessage("missing", ["body", field], "Field required"));
}

function wrongType(field: string, expected: string): RequestError {
  return new RequestError(400, validationMessage(`${expected}_type`, ["body", field], `Input should be a valid ${expected}`));
}

function optionalInteger(body: Record<string, unknown>, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value)) throw wrongType(field, "integer");
  return value;
}

function optionalNumber(body: Record<string, unknown>, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number") throw wrongType(field, "number");
  return value;
}

function optionalBoolean(body: Record<string, unknown>, field: string): boolean {
  const value = body[field];
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean") throw wrongType(field, "boolean");
  return value;
}

function contentText(content: unknown, index: number): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (part && typeof part === "object" && (part as { type?: unknown }).type === "text") return String((part as { text?: unknown }).text ?? "");
        return "<|media|>";
      })
      .join("");
  }
  throw new RequestError(400, validationMessage("string_type", ["body", "messages", index, "content"], "Input should be a valid string"));
}

function readMessages(value: unknown): ChatMessage[] {
  if (value === undefined || value === null) throw missing("messages");
  if (!Array.isArray(value)) throw new RequestError(400, validationMessage("list_type", ["body", "messages"], "Input should be a valid list"));
  return value.map((entry, index) => {
    if (!entry || typeof entry !== "object") throw new RequestError(400, validationMessage("model_type", ["body", "messages", index], "Input should be an object"));
    const role = (entry as { role?: unknown }).role;
    if (typeof role !== "string") throw new RequestError(400, validationMessage("missing", ["body", "messages", index, "role"], "Field required"));
    return { role, content: contentText((entry as { content?: unknown }).content, index) };
  });
}

/** Reads and validates a request body; throws RequestError with the engine's 400 text. */
export function readGenerateBody(endpoint: Endpoint, json: unknown): GenerateBody {
  if (!json || typeof json !== "object" || Array.isArray(json)) {
    throw new RequestError(400, validationMessage("model_attributes_type", ["body"], "Input should be a valid dictionary or object to extract fields from"));
  }
  const body = json as Record<string, unknown>;
  const model = body.model;
  if (model !== undefined && model !== null && typeof model !== "string") throw wrongType("model", "string");
  let promptText: string | undefined;
  let promptIds: number[] | undefined;
  if (endpoint === "chat") {
    promptText = renderChat(readMessages(body.messages));
  } else {
    const prompt = body.prompt;
    if (prompt === undefined || prompt === null) throw missing("prompt");
    const single = Array.isArray(prompt) && prompt.length === 1 ? prompt[0] : prompt;
    if (typeof single === "string") promptText = single;
    else if (Array.isArray(single) && single.every((id) => Number.isInteger(id))) promptIds = single as number[];
    else if (Array.isArray(prompt) && prompt.length > 1) throw new RequestError(400, "berth-sim serves one prompt per request; send batched prompts separately");
    else throw wrongType("prompt", "string");
  }
  const maxTokens = optionalInteger(body, endpoint === "chat" && body.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens");
  if (maxTokens !== undefined && maxTokens < 1) throw new RequestError(400, `max_tokens must be at least 1, got ${maxTokens}.`);
  const streamOptions = body.stream_options as { include_usage?: unknown; continuous_usage_stats?: unknown } | undefined | null;
  const kv = body.kv_transfer_params;
  const bootstrapPort = body.bootstrap_port;
  return {
    endpoint,
    model: (model as string | undefined) ?? undefined,
    promptText,
    promptIds,
    maxTokens,
    minTokens: optionalInteger(body, "min_tokens") ?? 0,
    ignoreEos: optionalBoolean(body, "ignore_eos"),
    stream: optionalBoolean(body, "stream"),
    includeUsage: streamOptions?.include_usage === true,
    continuousUsage: streamOptions?.continuous_usage_stats === true,
    seed: optionalInteger(body, "seed"),
    temperature: optionalNumber(body, "temperature"),
    kvTransferParams: kv && typeof kv === "object" && !Array.isArray(kv) ? (kv as Record<string, unknown>) : undefined,
    bootstrapHost: typeof body.bootstrap_host === "string" ? body.bootstrap_host : undefined,
    bootstrapPort: typeof bootstrapPort === "number" ? bootstrapPort : bootstrapPort === null ? null : undefined,
    bootstrapRoom: typeof body.bootstrap_room === "number" ? body.bootstrap_room : undefined,
    dataParallelRank: optionalInteger(body, "routed_dp_rank") ?? optionalInteger(body, "data_parallel_rank"),
  };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number } | null;
}

export function usage(promptTokens: number, completionTokens: number, cachedTokens: number | undefined): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: cachedTokens === undefined ? null : { cached_tokens: cachedTokens },
  };
}

export interface ResponseContext {
  flavour: Flavour;
  endpoint: Endpoint;
  id: string;
  created: number;
  model: string;
}

export function completeResponse(
  ctx: ResponseContext,
  text: string,
  finishReason: string,
  tokens: Usage,
  kvTransferParams: Record<string, unknown> | null,
): Record<string, unknown> {
  const base = { id: ctx.id, created: ctx.created, model: ctx.model };
  const extras = ctx.flavour === "vllm" ? { kv_transfer_params: kvTransferParams } : { metadata: { weight_version: "default" } };
  if (ctx.endpoint === "chat") {
    const message =
      ctx.flavour === "vllm"
        ? { role: "assistant", content: text, refusal: null, annotations: null, audio: null, function_call: null, tool_calls: [], reasoning_content: null }
        : { role: "assistant", content: text, reasoning_content: null, tool_calls: null };
    const choice =
      ctx.flavour === "vllm"
        ? { index: 0, message, logprobs: null, finish_reason: finishReason, stop_reason: null }
        : { index: 0, message, logprobs: null, finish_reason: finishReason, matched_stop: null };
    return { ...base, object: "chat.completion", choices: [choice], usage: tokens, prompt_logprobs: null, ...extras };
  }
  const choice =
    ctx.flavour === "vllm"
      ? { index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null, prompt_logprobs: null }
      : { index: 0, text, logprobs: null, finish_reason: finishReason, matched_stop: null };
  return { ...base, object: "text_completion", choices: [choice], usage: tokens, ...extras };
}

/** One SSE chunk: the assistant role opener (chat only), a piece of text, or the closing finish_reason. */
export function streamChunk(ctx: ResponseContext, piece: { role?: true; text?: string; finishReason?: string | null }, chunkUsage?: Usage): string {
  const finish = piece.finishReason ?? null;
  const choice =
    ctx.endpoint === "chat"
      ? { index: 0, delta: piece.role ? { role: "assistant", content: "" } : piece.text === undefined ? {} : { content: piece.text }, logprobs: null, finish_reason: finish }
      : { index: 0, text: piece.text ?? "", logprobs: null, finish_reason: finish, ...(ctx.flavour === "vllm" ? { stop_reason: null } : {}) };
  const chunk: Record<string, unknown> = {
    id: ctx.id,
    object: ctx.endpoint === "chat" ? "chat.completion.chunk" : "text_completion",
    created: ctx.created,
    model: ctx.model,
    choices: [choice],
  };
  if (chunkUsage) chunk.usage = chunkUsage;
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** The trailing usage-only chunk sent with `stream_options.include_usage`. */
export function usageChunk(ctx: ResponseContext, tokens: Usage): string {
  const chunk = {
    id: ctx.id,
    object: ctx.endpoint === "chat" ? "chat.completion.chunk" : "text_completion",
    created: ctx.created,
    model: ctx.model,
    choices: [],
    usage: tokens,
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

export const DONE = "data: [DONE]\n\n";
