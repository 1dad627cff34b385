// Pieces every route definition shares: problem responses declared once and spread
// into each route's OpenAPI, the bearer security requirement, and JSON bodies.
import type { z } from "zod";
import { Problem } from "../domain/resources.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: "The request is malformed: bad JSON, unknown or mistyped fields, bad parameters",
  401: "No valid bearer key",
  403: "The key may not do this, or the project's GPU quota would be exceeded",
  404: "Not found, or not visible to this key",
  409: "Conflicts with the current state",
  410: "The resume point is older than what retention keeps: start again without it",
  412: "If-Match does not match the current ETag",
  413: "Body larger than 1 MiB",
  415: "Content type not accepted",
  422: "Well-formed but refused by admission, or an Idempotency-Key reused for another request",
  429: "Too many requests for this key or address; wait for Retry-After seconds",
  500: "The server failed; the problem's instance is the request id to report",
};

export function problems(...codes: number[]) {
  return Object.fromEntries(
    codes.map((code) => [
      code,
      { description: PROBLEM_DESCRIPTIONS[code] ?? "Problem", content: { [PROBLEM_CONTENT_TYPE]: { schema: Problem } } },
    ]),
  );
}

/**
 * Problems any authenticated route can answer: the rate limiter answers 429 and any route can
 * fail with 500 before it knows anything else, so both come with the authentication ones.
 */
export const AUTH_PROBLEMS = [400, 401, 403, 429, 500] as const;
/** Problems any route with a JSON body can answer on top of those. */
export const BODY_PROBLEMS = [...AUTH_PROBLEMS, 413, 415, 422] as const;

export const bearerSecurity = [{ bearerAuth: [] }];

export function jsonBody<T extends z.ZodType>(schema: T, description: string) {
  return { required: true, description, content: { "application/json": { schema } } };
}

/** A PATCH body: RFC 7396 merge patch, accepted as merge-patch+json or plain JSON. */
export function mergePatchBody<T extends z.ZodType>(schema: T, description: string) {
  return {
    required: true,
    description,
    content: { "application/merge-patch+json": { schema }, "application/json": { schema } },
  };
}

export function jsonContent<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}

export const ifMatchHeader = {
  name: "If-Match",
  in: "header" as const,
  required: false,
  description: 'Apply only if the resource\'s ETag ("<resourceVersion>") still matches; otherwise 412.',
  schema: { type: "string" as const },
};

export const idempotencyKeyHeader = {
  name: "Idempotency-Key",
  in: "header" as const,
  required: false,
  description: "Repeat a POST safely: the same key and body replay the first success for 24 h.",
  schema: { type: "string" as const, maxLength: 255 },
};
