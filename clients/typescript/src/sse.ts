// A text/event-stream parser (the WHATWG "event stream interpretation"): lines end in
// CRLF, LF or CR; `data` lines join with "\n"; `id` sets the last event id, which stays
// in force for later events until another `id` line; `retry` sets the reconnect delay;
// a blank line dispatches; lines starting with ":" are comments (keep-alives).

export interface SseMessage {
  /** The last event id in force when this message was dispatched ("" if none yet). */
  id: string;
  /** The `event` field, "message" when absent. */
  event: string;
  data: string;
}

export interface SseHandlers {
  /** The server's reconnect delay (`retry:` field). */
  onRetry?(ms: number): void;
  /** Any bytes arrived (messages, comments, keep-alives). */
  onActivity?(): void;
  /**
   * Ends the parse (as if the stream ended) by cancelling the body. A fetch's own signal is
   * not enough: undici links a Request's signal to its caller's through objects that may be
   * garbage-collected once fetch has answered, so an abort can leave the socket open.
   */
  signal?: AbortSignal;
}

export async function* parseSse(body: ReadableStream<Uint8Array>, handlers: SseHandlers = {}): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const stop = () => void reader.cancel(handlers.signal?.reason).catch(() => {});
  if (handlers.signal?.aborted) stop();
  handlers.signal?.addEventListener("abort", stop, { once: true });
  const decoder = new TextDecoder();
  let buffer = "";
  let lastEventId = "";
  let event = "";
  let data: string[] = [];
  let pendingCR = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      handlers.onActivity?.();
      buffer += decoder.decode(value, { stream: true });
      // A CR ending the previous chunk may be half of a CRLF.
      if (pendingCR && buffer.startsWith("\n")) buffer = buffer.slice(1);
      pendingCR = false;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const ch = buffer[i];
        if (ch !== "\n" && ch !== "\r") continue;
        const line = buffer.slice(start, i);
        if (ch === "\r") {
          if (i + 1 === buffer.length) pendingCR = true;
          else if (buffer[i + 1] === "\n") i++;
        }
        start = i + 1;
        if (line === "") {
          if (data.length > 0) yield { id: lastEventId, event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
        else if (field === "id" && !value.includes("\0")) lastEventId = value;
        else if (field === "retry" && /^\d+$/.test(value)) handlers.onRetry?.(Number(value));
      }
      buffer = buffer.slice(start);
    }
  } finally {
    handlers.signal?.removeEventListener("abort", stop);
    await reader.cancel().catch(() => {});
  }
}
