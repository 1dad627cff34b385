// Follows a server-sent event stream across disconnects: on a dropped connection, an
// idle one (no bytes, not even the server's keep-alive, for idleTimeoutMs), the server's
// `error` message or a 5xx/429 answer, it reconnects after the server's `retry:` delay
// with Last-Event-ID set to the last id it saw, so the server resumes right after it (no
// gap) and anything at or before that id is dropped (no duplicate). A 4xx answer ends
// the iteration with a BerthApiError; aborting the signal ends it quietly.
import { BerthApiError } from "./errors.ts";
import { sleep } from "./retry.ts";
import { parseSse, type SseMessage } from "./sse.ts";

export interface FollowOptions {
  /** Stops following (the loop simply ends). */
  signal?: AbortSignal;
  /** Reconnect delay until the server sends its own `retry:` (default 1 s). */
  reconnectDelayMs?: number;
  /** Reconnect when nothing at all arrives for this long (default 45 s: three of the server's keep-alives). */
  idleTimeoutMs?: number;
  /** Give up after this many failed connection attempts in a row (default 10). */
  maxConsecutiveFailures?: number;
}

export interface StreamConnection {
  /** Opens the stream; `lastEventId` is undefined on the first connection. */
  (lastEventId: string | undefined, signal: AbortSignal): Promise<{ data?: ReadableStream<Uint8Array> | null; error?: unknown; response: Response }>;
}

export async function* followSse(connect: StreamConnection, options: FollowOptions = {}): AsyncGenerator<SseMessage> {
  const outer = options.signal;
  let delayMs = options.reconnectDelayMs ?? 1000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  const maxFailures = options.maxConsecutiveFailures ?? 10;
  let lastEventId: string | undefined;
  let failures = 0;

  while (!outer?.aborted) {
    // One controller per connection: the idle timer aborts it without ending the loop.
    const connection = new AbortController();
    const stopConnection = () => connection.abort(outer?.reason);
    outer?.addEventListener("abort", stopConnection, { once: true });
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const armIdleTimer = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => connection.abort(new Error("idle")), idleTimeoutMs);
    };
    const resumedAfter = lastEventId;
    try {
      armIdleTimer();
      const { data, error, response } = await untilAborted(connect(lastEventId, connection.signal), connection.signal);
      if (!response.ok || !data) {
        if (response.status < 500 && response.status !== 429) throw new BerthApiError(response, error);
        failures++;
      } else {
        failures = 0;
        const messages = parseSse(data, { onRetry: (ms) => (delayMs = ms), onActivity: armIdleTimer, signal: connection.signal });
        for await (const message of messages) {
          // The server's way of saying "reconnect with Last-Event-ID".
          if (message.event === "error") break;
          if (resumedAfter !== undefined && isAtOrBefore(message.id, resumedAfter)) continue;
          lastEventId = message.id || lastEventId;
          yield message;
        }
      }
    } catch (error) {
      if (outer?.aborted) return;
      if (error instanceof BerthApiError) throw error;
      // A network failure or an idle connection: reconnect below.
      if (!connection.signal.aborted) failures++;
    } finally {
      clearTimeout(idleTimer);
      outer?.removeEventListener("abort", stopConnection);
      connection.abort();
    }
    if (failures >= maxFailures) throw new Error(`event stream: ${failures} connection attempts in a row failed`);
    try {
      await sleep(delayMs * Math.min(2 ** Math.max(0, failures - 1), 16), outer);
    } catch {
      return;
    }
  }
}

/**
 * The connection's answer, or a rejection as soon as the signal aborts (the request's own
 * signal may not reach undici, see parseSse); a stream that arrives after that is cancelled.
 */
function untilAborted<T extends { data?: ReadableStream<Uint8Array> | null }>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(signal.reason);
      void pending.then((late) => late.data?.cancel().catch(() => {}), () => {});
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    pending.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** Numeric ids compare as numbers; anything else only by equality. */
function isAtOrBefore(id: string, resumedAfter: string): boolean {
  if (/^\d+$/.test(id) && /^\d+$/.test(resumedAfter)) return BigInt(id) <= BigInt(resumedAfter);
  return id === resumedAfter;
}
