// The SSE parser on awkward byte boundaries and the spec's corner cases.
import { describe, expect, it } from "vitest";
import { parseSse, type SseMessage } from "../../../clients/typescript/src/index.ts";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function collect(chunks: string[]) {
  const retries: number[] = [];
  const messages: SseMessage[] = [];
  for await (const message of parseSse(streamOf(chunks), { onRetry: (ms) => retries.push(ms) })) messages.push(message);
  return { messages, retries };
}

describe("parseSse", () => {
  it("parses ids, events, multi-line data, comments and retry, whatever the chunking", async () => {
    const text = "retry: 1000\n\n: heartbeat\n\nid: 7\nevent: ADDED\ndata: {\"a\":\ndata: 1}\n\ndata: plain\n\n";
    const expected = [
      { id: "7", event: "ADDED", data: '{"a":\n1}' },
      { id: "7", event: "message", data: "plain" },
    ];
    const whole = await collect([text]);
    expect(whole.messages).toEqual(expected);
    expect(whole.retries).toEqual([1000]);
    // Every byte in its own chunk.
    expect((await collect([...text])).messages).toEqual(expected);
  });

  it("accepts CRLF and CR line endings, even split across chunks", async () => {
    const { messages } = await collect(["id: 1\r", "\nevent: x\r\ndata: a\r", "\r", "id: 2\rdata: b\r\r"]);
    expect(messages).toEqual([
      { id: "1", event: "x", data: "a" },
      { id: "2", event: "message", data: "b" },
    ]);
  });

  it("does not dispatch an event with no data, and ignores a field without a colon's value", async () => {
    const { messages } = await collect(["event: nothing\n\nid: 3\n\ndata\n\n"]);
    expect(messages).toEqual([{ id: "3", event: "message", data: "" }]);
  });
});
