// A fetch that retries what is safe to retry: network errors, 5xx and 429, with capped
// exponential backoff (full jitter) or the server's Retry-After when it sends one. Every
// POST gets one Idempotency-Key per logical call, reused on each retry, so the server
// runs it at most once and replays its answer; a 409 saying that key is still in flight
// (our own earlier attempt) is retried too. Web-standard APIs only.

export interface RetryOptions {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  attempts?: number;
  /** The first backoff step (default 250 ms); each retry doubles it. */
  baseDelayMs?: number;
  /** The longest backoff step (default 8 s). */
  maxDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the answer is returned as is (default 30 s). */
  maxRetryAfterMs?: number;
  /** Random source for jitter, 0 ≤ x < 1 (tests pin it). */
  random?: () => number;
}

export type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;

const IDEMPOTENCY_HEADER = "Idempotency-Key";

export function retryingFetch(inner: Fetch, options: RetryOptions = {}): Fetch {
  const attempts = Math.max(1, options.attempts ?? 4);
  const baseDelayMs = options.baseDelayMs ?? 250;
  const maxDelayMs = options.maxDelayMs ?? 8_000;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
  const random = options.random ?? Math.random;
  const backoff = (retry: number) => random() * Math.min(maxDelayMs, baseDelayMs * 2 ** retry);

  return async (input, init) => {
    let request = input;
    if (request.method === "POST" && !request.headers.has(IDEMPOTENCY_HEADER)) {
      const headers = new Headers(request.headers);
      headers.set(IDEMPOTENCY_HEADER, crypto.randomUUID());
      request = new Request(request, { headers });
    }
    for (let attempt = 1; ; attempt++) {
      const last = attempt === attempts;
      // Each attempt sends a copy, so the body is still there for the next one.
      const sent = last ? request : request.clone();
      let response: Response;
      try {
        response = await inner(sent, init);
      } catch (error) {
        if (last || request.signal.aborted || !isNetworkError(error)) throw error;
        await sleep(backoff(attempt - 1), request.signal);
        continue;
      }
      if (last || !(await isRetryable(request, response))) return response;
      const retryAfter = retryAfterMs(response.headers.get("Retry-After"));
      if (retryAfter !== undefined && retryAfter > maxRetryAfterMs) return response;
      await response.body?.cancel().catch(() => {});
      await sleep(retryAfter ?? backoff(attempt - 1), request.signal);
    }
  };
}

async function isRetryable(request: Request, response: Response): Promise<boolean> {
  if (response.status === 429 || response.status >= 500) return true;
  if (response.status === 409 && request.headers.has(IDEMPOTENCY_HEADER)) {
    const body = (await response.clone().json().catch(() => undefined)) as { type?: unknown } | undefined;
    return typeof body?.type === "string" && body.type.endsWith("/idempotency-key-in-flight");
  }
  return false;
}

/** fetch rejects with a TypeError when the network fails (refused, reset, DNS); aborts are DOMExceptions. */
function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError;
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Waits, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
