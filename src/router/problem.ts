// The router's own errors as RFC 9457 problem+json (same `type` base as the API). Errors an
// upstream returns are never rewritten: they pass through as the engine sent them.
import type { ServerResponse } from "node:http";

const PROBLEM_BASE = "https://berth.dev/problems/";

export const PROBLEMS = {
  "invalid-request": { status: 400, title: "The request is not valid" },
  "malformed-body": { status: 400, title: "The request body is not valid JSON" },
  unauthorized: { status: 401, title: "Authentication required" },
  "not-found": { status: 404, title: "Not found" },
  "model-not-found": { status: 404, title: "The model is not served here" },
  "method-not-allowed": { status: 405, title: "Method not allowed" },
  "payload-too-large": { status: 413, title: "The request body is too large" },
  "bad-gateway": { status: 502, title: "No upstream could be reached" },
  unavailable: { status: 503, title: "Service unavailable" },
  "gateway-timeout": { status: 504, title: "The request timed out" },
} as const;

export type ProblemKind = keyof typeof PROBLEMS;

export interface ProblemOptions {
  headers?: Record<string, string>;
  /** Extra members, e.g. `errors` with JSON pointers. */
  extensions?: Record<string, unknown>;
  instance?: string;
}

export function sendProblem(res: ServerResponse, kind: ProblemKind, detail: string, options: ProblemOptions = {}): void {
  if (res.headersSent || res.destroyed) return;
  const { status, title } = PROBLEMS[kind];
  const body = JSON.stringify({
    type: PROBLEM_BASE + kind,
    title,
    status,
    detail,
    instance: options.instance ?? newRequestId(),
    ...options.extensions,
  });
  res.writeHead(status, {
    "content-type": "application/problem+json",
    "content-length": Buffer.byteLength(body),
    ...options.headers,
  });
  res.end(body);
}

export function newRequestId(): string {
  return `req_${crypto.randomUUID().replaceAll("-", "")}`;
}
