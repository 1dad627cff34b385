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
        frames.push(frame);
      }
    }
    return frames;
  } finally {
    await reader.cancel().catch(() => {});
  }
}
