// Server-sent event streams fed by polling the database: each poll returns the items
// after the last id sent; items go out as SSE events with that id (so a client resumes
// with Last-Event-ID), and a comment line keeps idle connections alive. Between polls a
// stream sleeps until its channel has a NOTIFY (the instance's notification hub) or a slow
// fallback timer ends (a lost notice costs at most that long); where no NOTIFY arrives
// (Neon) it polls every streamPollMs. A stream whose key is revoked ends with an `error`
// event that says so (docs/design.md §14.4).
import type { Context } from "hono";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import type { ChangeChannel } from "../services/notifications/notification-hub.ts";
import type { AppEnv } from "./env.ts";
import { holdSlot } from "./rate-limit.ts";
import { errorForLog } from "../services/log-error.ts";

export interface StreamItem {
  id: number;
  event: string;
  data: unknown;
}

export interface PolledStream {
  /** Resume after this id (0 = from the beginning). */
  after: number;
  /** Items after `after`, oldest first, at most `batchSize`. */
  poll(after: number): Promise<StreamItem[]>;
  batchSize: number;
  /** The NOTIFY channel whose notices mean a poll may find something. */
  channel: ChangeChannel;
}

/** The data of the `error` event that ends a stream whose key or credential was revoked. */
export const REVOKED_STREAM_ERROR = {
  reason: "CredentialRevoked",
  detail: "The API key or agent credential of this stream was revoked or expired; do not reconnect with it.",
};

/** The id a client resumes after: Last-Event-ID (reconnects) wins over the query's start point. */
export function resumePoint(c: Context<AppEnv>, fromQuery: number | undefined): number {
  const header = c.req.header("Last-Event-ID");
  if (header !== undefined && /^\d{1,18}$/.test(header.trim())) return Number(header.trim());
  return fromQuery ?? 0;
}

export function streamPolled(c: Context<AppEnv>, source: PolledStream): Response {
  const { config, logger, shutdown, notifications } = c.get("deps");
  // Over the key's cap of open streams: 429 before anything is sent.
  const release = holdSlot(c, "stream");
  const hold = notifications?.hold(c.get("principal"));
  return streamSSE(c, releasingSlot(release, async (stream) => {
    let after = source.after;
    // Ends the sleep between polls: the client went away, the instance stops, or the key was revoked.
    const stop = new AbortController();
    stream.onAbort(() => stop.abort());
    // A stopping instance ends its streams (clients resume elsewhere with Last-Event-ID).
    shutdown?.addEventListener("abort", () => stop.abort(), { once: true });
    hold?.signal.addEventListener("abort", () => stop.abort(), { once: true });
    const listening = (await notifications?.start()) ?? false;
    const sleepMs = listening ? config.streamFallbackMs : config.streamPollMs;
    let lastWrite = Date.now();
    try {
      await stream.write(`retry: ${config.streamPollMs * 2}\n\n`);
      while (!stop.signal.aborted) {
        if (!(await pollOnce(notifications?.count(source.channel) ?? 0))) return;
      }
      if (hold?.signal.aborted) await stream.writeSSE({ event: "error", data: JSON.stringify(REVOKED_STREAM_ERROR) });
    } finally {
      hold?.release();
    }

    /** One poll, its writes, and the sleep after it; false when the stream must end. */
    async function pollOnce(seen: number): Promise<boolean> {
      let batch: StreamItem[];
      try {
        batch = await source.poll(after);
      } catch (error) {
        // The client reconnects with Last-Event-ID and loses nothing.
        logger.warn({ requestId: c.get("requestId"), error: errorForLog(error) }, "event stream poll failed; closing it");
        await stream.writeSSE({ event: "error", data: JSON.stringify({ detail: "The stream stopped; reconnect with Last-Event-ID." }) });
        return false;
      }
      // Nothing more goes out once the key is revoked, not even what this poll found.
      if (hold?.signal.aborted) return true;
      for (const item of batch) {
        await stream.writeSSE({ id: String(item.id), event: item.event, data: JSON.stringify(item.data) });
        after = item.id;
        lastWrite = Date.now();
      }
      if (batch.length === source.batchSize) return true;
      // Sleep until a notice, the fallback timer or the end; heartbeats go out meanwhile
      // without a poll, so an idle stream costs one poll per fallback period.
      const pollAgainAt = Date.now() + sleepMs;
      for (;;) {
        if (Date.now() - lastWrite >= config.streamHeartbeatMs) {
          await stream.write(": heartbeat\n\n");
          lastWrite = Date.now();
        }
        const untilHeartbeat = config.streamHeartbeatMs - (Date.now() - lastWrite);
        const ms = Math.max(0, Math.min(pollAgainAt - Date.now(), untilHeartbeat));
        if (notifications) await notifications.waitForChange(source.channel, seen, ms, stop.signal);
        else await stream.sleep(ms);
        const noticed = notifications !== undefined && notifications.count(source.channel) !== seen;
        if (noticed || stop.signal.aborted || Date.now() >= pollAgainAt) return true;
      }
    }
  }));
}

/** The slot is freed the moment the client goes (not after the next poll) and however the stream ends. */
function releasingSlot(release: () => void, run: (stream: SSEStreamingApi) => Promise<void>) {
  return async (stream: SSEStreamingApi) => {
    stream.onAbort(release);
    try {
      await run(stream);
    } finally {
      release();
    }
  };
}
