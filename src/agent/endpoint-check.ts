// Whether a deployment's endpoint answers (docs/design.md §3.2). Pod readiness says that the
// engines and routers answer their own probes, not that the Service routes to them: on a real
// cluster kube-proxy programs a Service a moment after its endpoints turn ready, and a deployment
// reported Ready on readiness alone refused its first request. So the agent asks the endpoint
// itself before it reports Ready. Any HTTP answer counts — the check is of the route, the
// readiness probes already checked the model — while a refused, reset or timed-out connection
// does not. An endpoint that answered keeps counting as answering until it misses
// ENDPOINT_FAILURE_THRESHOLD checks in a row: one slow answer under load is not an outage.

/** Served by vLLM, SGLang, berth's router and the external routers alike, at once and without a model call. */
export const ENDPOINT_CHECK_PATH = "/v1/models";
export const ENDPOINT_CHECK_TIMEOUT_MS = 5_000;
export const ENDPOINT_FAILURE_THRESHOLD = 2;

/** One question to the endpoint: answered (any HTTP status), or why not. */
export type EndpointReply = { answered: true; status: number } | { answered: false; error: string };

/** What the agent holds about one deployment's endpoint between passes. */
export interface EndpointCheck {
  endpoint: string;
  answered: boolean;
  /** Unanswered checks in a row (0 after an answer). */
  misses: number;
  /** The last reply, in words: what the status message repeats. */
  detail: string;
}

/** The check after one more reply from `endpoint`; a new endpoint starts from nothing. */
export function nextEndpointCheck(previous: EndpointCheck | undefined, endpoint: string, reply: EndpointReply): EndpointCheck {
  const before = previous?.endpoint === endpoint ? previous : undefined;
  if (reply.answered) return { endpoint, answered: true, misses: 0, detail: `answered ${reply.status}` };
  const misses = (before?.misses ?? 0) + 1;
  const answered = (before?.answered ?? false) && misses < ENDPOINT_FAILURE_THRESHOLD;
  return { endpoint, answered, misses, detail: reply.error };
}

/** Asks `endpoint` for ENDPOINT_CHECK_PATH; never throws. */
export async function askEndpoint(endpoint: string, timeoutMs = ENDPOINT_CHECK_TIMEOUT_MS): Promise<EndpointReply> {
  try {
    const res = await fetch(`${endpoint}${ENDPOINT_CHECK_PATH}`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return { answered: true, status: res.status };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const name = (error as Error).name;
    return { answered: false, error: name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : (cause?.code ?? cause?.message ?? (error as Error).message) };
  }
}
