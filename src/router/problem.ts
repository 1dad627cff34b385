// The router's own errors, sent in the shape the path calls for (openai-error.ts decides):
// OpenAI-shaped JSON on /v1/*, RFC 9457 problem+json elsewhere (same `type` base as the API).
// Errors an upstream returns are never rewritten: they pass through as the engine sent them.
import type { ServerResponse } from "node:http";
import { errorShapeFor, openAiErrorBody, paramOfPointer } from "./openai-error.ts";

const PROBLEM_BASE = "https://berth.dev/problems/";

export const PROBLEMS = {
  "invalid-request": { status: 400, title: "The request is not valid" },
  "malformed-body": { status: 400, title: "The request body is not valid JSON" },
  unauthorized: { status: 401, title: "Authentication required" },
  "not-found": { status: 404, title: "Not found" },
  "model-not-found": { status: 404, title: "The model is not served here" },
  "method-not-allowed": { status: 405, title: "Method not allowed" },
  "payload-too-large": { status: 413, title: "The request body is too large" },
  internal: { status: 500, title: "Internal error" },
  "bad-gateway": { status: 502, title: "No upstream could be reached" },
  unavailable: { status: 503, title: "Service unavailable" },
  "gateway-timeout": { status: 504, title: "The request timed out" },
} as const;

export type ProblemKind = keyof typeof PROBLEMS;

export interface ProblemOptions {
  headers?: Record<string, string>;
  /** JSON pointer to the body field at fault: `errors[]` in a problem, `param` in an OpenAI error. */
  pointer?: string;
  /** Extra problem members (the admin API's `errors[]`); problem+json only. */
  extensions?: Record<string, unknown>;
  /** The client's request id; a new one otherwise. */
  instance?: string;
}

/** Sends the router's own error for `res`'s request, shaped by its path. */
export function sendError(res: ServerResponse, kind: ProblemKind, detail: string, options: ProblemOptions = {}): void {
  if (res.headersSent || res.destroyed) return;
  const requestId = options.instance ?? newRequestId();
  if (errorShapeFor(res.req?.url ?? "/") === "openai") {
    const body = JSON.stringify(openAiErrorBody(kind, detail, requestId, paramOfPointer(options.pointer)));
    writeJson(res, PROBLEMS[kind].status, "application/json", body, { ...options.headers, "x-request-id": requestId });
  } else {
    sendProblem(res, kind, detail, { ...options, instance: requestId });
  }
}

/** An RFC 9457 problem, whatever the path (the admin API). */
export function sendProblem(res: ServerResponse, kind: ProblemKind, detail: string, options: ProblemOptions = {}): void {
  if (res.headersSent || res.destroyed) return;
  const { status, title } = PROBLEMS[kind];
  const body = JSON.stringify({
    type: PROBLEM_BASE + kind,
    title,
    status,
    detail,
    instance: options.instance ?? newRequestId(),
    ...(options.pointer !== undefined ? { errors: [{ pointer: options.pointer, detail }] } : {}),
    ...options.extensions,
  });
  writeJson(res, status, "application/problem+json", body, options.headers);
}

function writeJson(res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

export function newRequestId(): string {
  return `req_${crypto.randomUUID().replaceAll("-", "")}`;
}
