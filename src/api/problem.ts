// The one error path: every thrown error becomes an RFC 9457 problem+json body.
// Domain errors map through one table; anything else is a 500 with no internals.
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { DomainError, InvalidRequest, MalformedBody, UnsupportedMediaType } from "../domain/errors.ts";
import { PROBLEM_ERRORS_MAX } from "../domain/resources.ts";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";
const PROBLEM_BASE = "https://berth.dev/problems/";

const STATUS_BY_KIND: Record<string, { status: number; title: string }> = {
  "invalid-request": { status: 400, title: "The request is not valid" },
  "malformed-body": { status: 400, title: "The request body is not valid JSON" },
  unauthorized: { status: 401, title: "Authentication required" },
  forbidden: { status: 403, title: "Not allowed" },
  "quota-exceeded": { status: 403, title: "Project GPU quota exceeded" },
  "not-found": { status: 404, title: "Not found" },
  conflict: { status: 409, title: "Conflict" },
  "idempotency-key-in-flight": { status: 409, title: "A request with this Idempotency-Key is still running" },
  "limit-reached": { status: 409, title: "A configured limit on how many may exist is reached" },
  gone: { status: 410, title: "The cursor is older than what is kept" },
  "precondition-failed": { status: 412, title: "The resource changed (If-Match does not match)" },
  "payload-too-large": { status: 413, title: "The request body is too large" },
  "unsupported-media-type": { status: 415, title: "Unsupported content type" },
  "invalid-spec": { status: 422, title: "The deployment spec was not admitted" },
  "idempotency-key-reused": { status: 422, title: "Idempotency-Key reused with a different request" },
  "rate-limited": { status: 429, title: "Too many requests" },
  "too-many-open": { status: 429, title: "Too many open streams or long-polls" },
  unavailable: { status: 503, title: "Service unavailable" },
};

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  errors?: unknown[];
  [extension: string]: unknown;
}

export function problemFromError(error: unknown, requestId: string): Problem {
  if (error instanceof DomainError) {
    const { status, title } = STATUS_BY_KIND[error.kind] ?? { status: 500, title: "Internal error" };
    const problem: Problem = {
      type: PROBLEM_BASE + error.kind,
      title,
      status,
      detail: error.message,
      instance: requestId,
      ...error.extensions,
    };
    // The document bounds errors[] (PROBLEM_ERRORS_MAX); the first ones name where to start.
    if ("errors" in error && Array.isArray(error.errors)) problem.errors = error.errors.slice(0, PROBLEM_ERRORS_MAX);
    return problem;
  }
  if (error instanceof HTTPException) {
    return problemFromHttpException(error, requestId);
  }
  if (isUnstorableText(error)) {
    return problemFromError(
      new InvalidRequest("The request contains a NUL character (U+0000), which cannot be stored; remove it.", []),
      requestId,
    );
  }
  return {
    type: PROBLEM_BASE + "internal",
    title: "Internal error",
    status: 500,
    detail: "The server failed to handle the request; it has been logged under this request id.",
    instance: requestId,
  };
}

/** Hono's own validators and body parsing throw HTTPException; keep them in the same shape. */
function problemFromHttpException(error: HTTPException, requestId: string): Problem {
  if (error.status === 400 && /malformed json/i.test(error.message)) {
    return problemFromError(new MalformedBody("The request body is not valid JSON; send a JSON object."), requestId);
  }
  if (error.status === 413) {
    return {
      type: PROBLEM_BASE + "payload-too-large",
      title: STATUS_BY_KIND["payload-too-large"]!.title,
      status: 413,
      detail: "The request body is larger than 1 MiB; send a smaller body.",
      instance: requestId,
    };
  }
  if (error.status === 415) {
    return problemFromError(new UnsupportedMediaType(
        "The request's Content-Type is not accepted here; send application/json (PATCH also takes application/merge-patch+json).",
      ), requestId);
  }
  return {
    type: PROBLEM_BASE + (error.status >= 500 ? "internal" : "invalid-request"),
    title: error.status >= 500 ? "Internal error" : "The request is not valid",
    status: error.status,
    detail: error.message || "The request could not be handled.",
    instance: requestId,
  };
}

/**
 * SQLSTATEs PostgreSQL (every driver) raises for text it cannot store: 22021 for NUL (0x00) in a
 * text parameter, 22P05 for \u0000 in jsonb. Only a request can put NUL there (ids in paths and
 * queries, body strings), so these are the caller's error, not a 500. Drizzle wraps the driver
 * error in `cause`.
 */
const UNSTORABLE_TEXT_CODES = new Set(["22021", "22P05"]);

function isUnstorableText(error: unknown): boolean {
  for (let current = error, depth = 0; typeof current === "object" && current !== null && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && UNSTORABLE_TEXT_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

export function problemResponse(c: Context, problem: Problem, headers: Record<string, string> = {}): Response {
  return c.json(problem, problem.status as 400, { "Content-Type": PROBLEM_CONTENT_TYPE, ...headers });
}

export function invalidRequestFromIssues(message: string, errors: InvalidRequest["errors"]): InvalidRequest {
  return new InvalidRequest(message, errors);
}
