// Reads a text/event-stream response frame by frame until a condition holds (bounded in time).
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

export async function readSse(
  response: Response,
  until: (frames: SseFrame[]) => boolean,
  timeoutMs = 5000,
): Promise<SseFrame[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const frames: SseFrame[] = [];
  let buffer = "";
  const deadline = Date.now() + timeoutMs;
  try {
    while (!until(frames)) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`SSE condition not met in ${timeoutMs} ms; got ${JSON.stringify(frames)}`);
      const chunk = await Promise.race([
        reader.read(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`SSE read timed out; got ${JSON.stringify(frames)}`)), remaining)),
      ]);
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        frames.push(parseFrame(block));
      }
    }
    return frames;
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** One SSE block as a frame (comment, id, event and data lines). */
function parseFrame(block: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) frame.comment = line.slice(1).trim();
    else {
      const at = line.indexOf(":");
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
      if (field === "id" || field === "event") frame[field] = value;
      else if (field === "data") frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
    }
  }
  return frame;
}

export interface SseReader {
  /** Every frame read so far. */
  frames: SseFrame[];
  /** Set once the stream ended: "ended" (a clean end) or the error that cut it. */
  closed(): "ended" | Error | undefined;
  /** Reads on until `until` holds or the stream closes; rejects after `timeoutMs`. */
  readUntil(until: (frames: SseFrame[]) => boolean, timeoutMs?: number): Promise<SseFrame[]>;
  /** Stops reading (cancels the body). */
  cancel(): Promise<void>;
}

/**
 * Reads a stream in the background for as long as it lasts (a stream that is cut, rather than
 * read to a condition and dropped): frames collect in `frames`, and `closed()` tells how it ended.
 */
export function openSseReader(response: Response): SseReader {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const frames: SseFrame[] = [];
  const listeners = new Set<() => void>();
  let closed: "ended" | Error | undefined;
  let buffer = "";
  const notify = () => listeners.forEach((listener) => listener());
  void (async () => {
    try {
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        buffer += decoder.decode(chunk.value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          frames.push(parseFrame(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
        }
        notify();
      }
      closed = "ended";
    } catch (error) {
      closed = error instanceof Error ? error : new Error(String(error));
    }
    notify();
  })();
  return {
    frames,
    closed: () => closed,
    readUntil(until, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (until(frames) || closed !== undefined) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(frames);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`SSE condition not met in ${timeoutMs} ms; got ${JSON.stringify(frames)}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}
