// The mapping from the router's problems to OpenAI-shaped errors, and the per-path shape rule.
import { describe, expect, it } from "vitest";
import { errorShapeFor, openAiErrorBody, openAiErrorType, paramOfPointer } from "../../src/router/openai-error.ts";
import { PROBLEMS, type ProblemKind } from "../../src/router/problem.ts";

describe("errorShapeFor", () => {
  it.each([
    ["/v1/chat/completions", "openai"],
    ["/v1/completions?x=1", "openai"],
    ["/v1/models", "openai"],
    ["/v1/models/Qwen/Qwen3-8B", "openai"],
    ["/v1/embeddings", "openai"],
    ["/v1/responses", "openai"],
    ["/v1", "openai"],
    ["/admin/endpoints", "problem"],
    ["/admin/health", "problem"],
    ["/metrics", "problem"],
    ["/", "problem"],
    ["/v10/models", "problem"],
    ["/v1models", "problem"],
  ])("%s → %s", (url, shape) => {
    expect(errorShapeFor(url)).toBe(shape);
  });
});

describe("openAiErrorType", () => {
  it.each(Object.keys(PROBLEMS) as ProblemKind[])("%s is snake_case of the problem kind", (kind) => {
    expect(openAiErrorType(kind)).toBe(kind.replaceAll("-", "_"));
    expect(openAiErrorType(kind)).toMatch(/^[a-z_]+$/);
  });
});

describe("paramOfPointer", () => {
  it.each([
    [undefined, null],
    ["", null],
    ["/model", "model"],
    ["/messages", "messages"],
    ["/messages/0", "messages[0]"],
    ["/messages/2/content/1/image_url", "messages[2].content[1].image_url"],
    ["/a~1b/c~0d", "a/b.c~d"],
    ["/0", "0"],
  ])("%s → %s", (pointer, param) => {
    expect(paramOfPointer(pointer)).toBe(param);
  });
});

describe("openAiErrorBody", () => {
  it.each([
    { kind: "model-not-found" as const, param: "model", type: "model_not_found" },
    { kind: "invalid-request" as const, param: "messages", type: "invalid_request" },
    { kind: "malformed-body" as const, param: null, type: "malformed_body" },
    { kind: "payload-too-large" as const, param: null, type: "payload_too_large" },
    { kind: "unavailable" as const, param: null, type: "unavailable" },
    { kind: "internal" as const, param: null, type: "internal" },
  ])("$kind → type and code $type", ({ kind, param, type }) => {
    expect(openAiErrorBody(kind, "what went wrong", "req_1", param)).toEqual({
      error: { message: "what went wrong", type, param, code: type, request_id: "req_1" },
    });
  });
});
