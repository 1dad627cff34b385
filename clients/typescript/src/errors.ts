// Failed calls as one error type: the API answers every failure with an RFC 9457
// problem (title, status, detail, errors[] with a JSON pointer, parameter or header each).
import type { components } from "./schema.ts";

export type Problem = components["schemas"]["Problem"];
export type ProblemError = components["schemas"]["ProblemError"];

export function isProblem(value: unknown): value is Problem {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { title?: unknown }).title === "string" &&
    typeof (value as { status?: unknown }).status === "number"
  );
}

/** A non-2xx answer; `problem` is the parsed problem+json body when the server sent one. */
export class BerthApiError extends Error {
  readonly status: number;
  readonly problem: Problem | undefined;
  readonly response: Response;

  constructor(response: Response, body: unknown) {
    const problem = isProblem(body) ? body : undefined;
    const summary = problem ? `${problem.title}${problem.detail ? `: ${problem.detail}` : ""}` : `HTTP ${response.status}`;
    super(`${summary} (${response.status})`);
    this.name = "BerthApiError";
    this.status = response.status;
    this.problem = problem;
    this.response = response;
  }

  /** Where each problem lies: "/spec/roles/0/replicas: message", "parameter limit: message", "header if-match: message". */
  get fieldErrors(): string[] {
    return (this.problem?.errors ?? []).map(describeProblemError);
  }
}

export function describeProblemError(error: ProblemError): string {
  const where =
    error.pointer ?? (error.parameter !== undefined ? `parameter ${error.parameter}` : error.header !== undefined ? `header ${error.header}` : "");
  return where ? `${where}: ${error.message}` : error.message;
}

/** The data of an openapi-fetch result, or a BerthApiError for an error answer. */
export async function unwrap<T, E>(
  pending: Promise<{ data?: T; error?: E; response: Response }> | { data?: T; error?: E; response: Response },
): Promise<T> {
  const { data, error, response } = await pending;
  if (!response.ok) throw new BerthApiError(response, error);
  return data as T;
}
