// Server-sent event streams fed by polling the database: each poll returns the items
// after the last id sent; items go out as SSE events with that id (so a client resumes
// with Last-Event-ID), and a comment line keeps idle connections alive. Polling works
// the same on every driver and runtime; the poll interval bounds the delay.
import type { Context } from "hono";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
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
}

/** The id a client resumes after: Last-Event-ID (reconnects) wins over the query's start point. */
export function resumePoint(c: Context<AppEnv>, fromQuery: number | undefined): number {
  const header = c.req.header("Last-Event-ID");
  if (header !== undefined && /^\d{1,18}$/.test(header.trim())) return Number(header.trim());
  return fromQuery ?? 0;
}

export function streamPolled(c: Context<AppEnv>, source: PolledStream): Response {
  const { config, logger, shutdown } = c.get("deps");
  // Over the key's cap of open streams: 429 before anything is sent.
  const release = holdSlot(c, "stream");
  return streamSSE(c, releasingSlot(release, async (stream) => {
    let after = source.after;
    let aborted = false;
    stream.onAbort(() => {
      aborted = true;
    });
    // A stopping instance ends its streams (clients resume elsewhere with Last-Event-ID).
    shutdown?.addEventListener("abort", () => (aborted = true), { once: true });
    let lastWrite = Date.now();
    await stream.write(`retry: ${config.streamPollMs * 2}\n\n`);
    while (!aborted && !shutdown?.aborted) {
      let batch: StreamItem[];
      try {
        batch = await source.poll(after);
      } catch (error) {
        // The client reconnects with Last-Event-ID and loses nothing.
        logger.warn({ requestId: c.get("requestId"), error: errorForLog(error) }, "event stream poll failed; closing it");
        await stream.writeSSE({ event: "error", data: JSON.stringify({ detail: "The stream stopped; reconnect with Last-Event-ID." }) });
        return;
      }
      for (const item of batch) {
        await stream.writeSSE({ id: String(item.id), event: item.event, data: JSON.stringify(item.data) });
        after = item.id;
        lastWrite = Date.now();
      }
      if (batch.length === source.batchSize) continue;
      if (Date.now() - lastWrite >= config.streamHeartbeatMs) {
        await stream.write(": heartbeat\n\n");
        lastWrite = Date.now();
      }
      await stream.sleep(config.streamPollMs);
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
