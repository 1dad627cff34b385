// The router's own errors in the shape OpenAI clients read on /v1/* paths, and the rule that
// picks the shape per path. Pure: the body and headers are computed here, sent by problem.ts.
// Shape (https://platform.openai.com/docs/guides/error-codes, read by the openai SDKs'
// APIError): { error: { message, type, param, code, request_id } }.
//  - `type` and `code` are both berth's problem kind with `_` for `-` (model-not-found →
//    "model_not_found"), so a client can branch on either field the SDK exposes;
//  - `param` is the offending body field as a dotted path ("messages[0]"), else null;
//  - `request_id` is the client's X-Request-Id or a generated one, also sent as the header.
// Errors an engine answers are never rewritten; they pass through as sent.
import type { ProblemKind } from "./problem.ts";

export type ErrorShape = "openai" | "problem";

export interface OpenAiErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string;
    request_id: string;
  };
}

/** OpenAI-shaped errors on the OpenAI surface (/v1/…), problem+json everywhere else (/admin/…). */
export function errorShapeFor(url: string): ErrorShape {
  return url === "/v1" || url.startsWith("/v1/") || url.startsWith("/v1?") ? "openai" : "problem";
}

/** berth's problem kind as an OpenAI `type`/`code`: "model-not-found" → "model_not_found". */
export function openAiErrorType(kind: ProblemKind | "internal"): string {
  return kind.replaceAll("-", "_");
}

/**
 * A JSON pointer to a body field as OpenAI's `param`: "/messages/0/content" →
 * "messages[0].content"; the whole body ("") → null.
 */
export function paramOfPointer(pointer: string | undefined): string | null {
  if (pointer === undefined || pointer === "" || pointer === "/") return null;
  let param = "";
  for (const raw of pointer.slice(1).split("/")) {
    const part = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (/^\d+$/.test(part) && param !== "") param += `[${part}]`;
    else param += param === "" ? part : `.${part}`;
  }
  return param;
}

export function openAiErrorBody(
  kind: ProblemKind | "internal",
  message: string,
  requestId: string,
  param: string | null = null,
): OpenAiErrorBody {
  const type = openAiErrorType(kind);
  return { error: { message, type, param, code: type, request_id: requestId } };
}
