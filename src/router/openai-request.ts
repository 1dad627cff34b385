// What the router reads from an OpenAI request body: model, stream, routing inputs (prompt
// text, session key) and media parts. It checks only what routing needs; the engine
// validates everything else.

export type InferenceKind = "chat" | "completion";

export interface InferenceRequest {
  kind: InferenceKind;
  path: string;
  /** The body exactly as received: forwarded unchanged when no leg needs to edit it. */
  raw: Buffer;
  body: Record<string, unknown>;
  model: string;
  stream: boolean;
  /** The `user` field, the session key when no `x-session-id` header is sent. */
  user: string | undefined;
}

export class InvalidInferenceRequest extends Error {
  constructor(
    message: string,
    readonly pointer: string,
    readonly malformed = false,
  ) {
    super(message);
  }
}

export function parseInferenceRequest(kind: InferenceKind, path: string, raw: Buffer): InferenceRequest {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new InvalidInferenceRequest("The request body is not valid JSON; send a JSON object.", "", true);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new InvalidInferenceRequest("The request body must be a JSON object.", "");
  }
  const fields = body as Record<string, unknown>;
  if (typeof fields.model !== "string" || fields.model === "") {
    throw new InvalidInferenceRequest("`model` is required: name one of the models listed at /v1/models.", "/model");
  }
  if (kind === "chat") {
    if (!Array.isArray(fields.messages) || fields.messages.length === 0) {
      throw new InvalidInferenceRequest("`messages` is required and must be a non-empty array.", "/messages");
    }
    const bad = fields.messages.findIndex((message) => typeof message !== "object" || message === null);
    if (bad >= 0) throw new InvalidInferenceRequest("Each message must be an object.", `/messages/${bad}`);
  } else if (!isPrompt(fields.prompt)) {
    throw new InvalidInferenceRequest(
      "`prompt` is required: a string, an array of strings or an array of token ids.",
      "/prompt",
    );
  }
  if (fields.stream !== undefined && typeof fields.stream !== "boolean") {
    throw new InvalidInferenceRequest("`stream` must be a boolean.", "/stream");
  }
  return {
    kind,
    path,
    raw,
    body: fields,
    model: fields.model,
    stream: fields.stream === true,
    user: typeof fields.user === "string" ? fields.user : undefined,
  };
}

function isPrompt(value: unknown): boolean {
  if (typeof value === "string") return true;
  return Array.isArray(value) && value.length > 0;
}

const MEDIA_PART_TYPES = new Set(["image_url", "input_image", "audio_url", "input_audio", "video_url"]);

/** True when a chat message carries a media content part (the EPD trigger). */
export function hasMediaParts(request: InferenceRequest): boolean {
  if (request.kind !== "chat") return false;
  for (const message of request.body.messages as Record<string, unknown>[]) {
    const content = message.content;
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      if (typeof part === "object" && part !== null && MEDIA_PART_TYPES.has((part as { type?: unknown }).type as string)) {
        return true;
      }
    }
  }
  return false;
}

const MEDIA_MARK_CHARS = 256;

/**
 * The text cache_aware matches on: the model, then each message's role and text in order
 * (media parts as a short marker of their URL), or the completion prompt. Equal prefixes
 * of conversation give equal prefixes of this text.
 */
export function promptText(request: InferenceRequest): string {
  let text = request.model + "\u0000";
  if (request.kind === "completion") {
    const prompt = request.body.prompt;
    if (typeof prompt === "string") return text + prompt;
    return text + (prompt as unknown[]).map((item) => (typeof item === "string" ? item : JSON.stringify(item))).join("\u0001");
  }
  for (const message of request.body.messages as Record<string, unknown>[]) {
    text += `${typeof message.role === "string" ? message.role : ""}:`;
    const content = message.content;
    if (typeof content === "string") text += content;
    else if (Array.isArray(content)) {
      for (const part of content) text += partText(part);
    }
    text += "\n";
  }
  return text;
}

function partText(part: unknown): string {
  if (typeof part !== "object" || part === null) return "";
  const fields = part as Record<string, unknown>;
  if (typeof fields.text === "string") return fields.text;
  const media = fields[fields.type as string];
  const url =
    typeof media === "string" ? media : typeof media === "object" && media !== null ? (media as { url?: unknown }).url : undefined;
  return typeof url === "string" ? `[${String(fields.type)}:${url.slice(0, MEDIA_MARK_CHARS)}]` : "";
}
