// One streaming chat completion, timed at the client: the time to the first content chunk and every
// gap between content chunks after it (the client's inter-token latency: each simulated engine step
// sends one chunk per request). Closed-loop workers on top. Shared by the disaggregation benchmarks.
import { renderChat, tokenize } from "../../src/sim/tokens.ts";

export interface StreamRecord {
  startedAt: number;
  endedAt: number;
  ok: boolean;
  error?: string;
  /** POST sent → the first chunk carrying content. */
  ttftMs?: number;
  /** Gaps between consecutive content chunks, ms. */
  gapsMs: number[];
  promptTokens?: number;
  completionTokens?: number;
}

export type ChatContent = string | Array<{ type: "text"; text: string } | { type: "image_url"; image_url: { url: string } }>;

export interface StreamRequest {
  endpoint: string;
  model: string;
  content: ChatContent;
  maxTokens: number;
  timeoutMs: number;
}

/** A text of exactly `tokens` simulator tokens once rendered as one user turn, opening with a unique tag (no prefix-cache hits). */
export function promptOf(tag: string, tokens: number): string {
  const overhead = tokenize(renderChat([{ role: "user", content: tag }])).count;
  return tag + " lorem".repeat(Math.max(0, tokens - overhead));
}

export async function streamChat({ endpoint, model, content, maxTokens, timeoutMs }: StreamRequest): Promise<StreamRecord> {
  const startedAt = performance.now();
  const gapsMs: number[] = [];
  const record = (ok: boolean, extra: Partial<StreamRecord> = {}): StreamRecord => ({ startedAt, endedAt: performance.now(), ok, gapsMs, ...extra });
  try {
    const res = await fetch(`${endpoint}/v1/chat/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        model,
        messages: [{ role: "user", content }],
        max_tokens: maxTokens,
        ignore_eos: true,
        stream: true,
        stream_options: { include_usage: true },
      }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status !== 200) return record(false, { error: `http ${res.status}: ${(await res.text()).slice(0, 160)}` });
    let ttftMs: number | undefined;
    let lastContentAt = 0;
    let usage: { prompt_tokens?: number; completion_tokens?: number } | undefined;
    let done = false;
    let buffered = "";
    const decoder = new TextDecoder();
    const reader = res.body!.getReader();
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      const at = performance.now();
      buffered += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const event = buffered.slice(0, end).trim();
        buffered = buffered.slice(end + 2);
        if (!event.startsWith("data:")) continue;
        const data = event.slice(5).trim();
        if (data === "[DONE]") {
          done = true;
          continue;
        }
        const chunk = JSON.parse(data);
        if (chunk.error) {
          await reader.cancel().catch(() => {});
          return record(false, { error: `stream error: ${JSON.stringify(chunk.error).slice(0, 160)}` });
        }
        if (chunk.usage) usage = chunk.usage;
        if (!chunk.choices?.[0]?.delta?.content) continue;
        if (ttftMs === undefined) ttftMs = at - startedAt;
        else gapsMs.push(at - lastContentAt);
        lastContentAt = at;
      }
    }
    if (!done) return record(false, { error: "stream ended without [DONE]" });
    if (usage?.completion_tokens !== maxTokens) return record(false, { error: `${usage?.completion_tokens} of ${maxTokens} tokens` });
    return record(true, { ttftMs, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens });
  } catch (error) {
    return record(false, { error: (error as Error).name === "TimeoutError" ? "timeout" : `network: ${(error as Error).message}` });
  }
}

/**
 * `clients` workers, each sending its next request when the last one ended, until `requests` were
 * sent or `limitMs` passed (no new request after that). `next(n)` builds request n. Worker i starts
 * `i × staggerMs` after the first: without it, requests of one length start and end together, and
 * every wave's prefills run while nothing decodes (no interference to measure).
 */
export async function closedLoop(options: { clients: number; requests: number; limitMs: number; staggerMs?: number; next: (n: number) => StreamRequest }): Promise<StreamRecord[]> {
  const records: StreamRecord[] = [];
  let sent = 0;
  const deadline = performance.now() + options.limitMs;
  const worker = async (i: number) => {
    if (options.staggerMs) await new Promise((r) => setTimeout(r, i * options.staggerMs!));
    while (sent < options.requests && performance.now() < deadline) records.push(await streamChat(options.next(sent++)));
  };
  await Promise.all(Array.from({ length: options.clients }, (_, i) => worker(i)));
  return records;
}
