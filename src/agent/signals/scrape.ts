// Reads every given engine pod's /metrics (the I/O half): concurrently up to a cap, each read
// bounded in time and size, then the pure parse → sample → interval against the caller's previous
// samples. Nothing is kept here: the caller stores `samples` and passes it back next interval.
import { readEngineIdentity, readEngineValues } from "./engine.ts";
import { parseExposition } from "./exposition.ts";
import { mapConcurrently } from "./concurrency.ts";
import { computeInterval, type EngineSample, type PodInterval } from "./interval.ts";
import type { ScrapeFailure } from "./aggregate.ts";
import type { PodRef } from "./signals.ts";

export interface EnginePod extends PodRef {
  /** The engine's base URL, e.g. `http://10.0.0.7:8000`. */
  url: string;
}

export interface ScrapeOptions {
  timeoutMs: number;
  fetch?: typeof fetch;
  /** Reads in flight at once (default 16). */
  concurrency?: number;
  /** A larger body is a failed read (default 8 MiB; vLLM with many ranks serves a few hundred KiB). */
  maxBytes?: number;
  now?: () => number;
}

export interface ScrapeResult {
  /** This interval's reads by pod uid, plus earlier reads of pods that failed now: next time's `previous`. */
  samples: Map<string, EngineSample>;
  intervals: PodInterval[];
  failures: ScrapeFailure[];
}

const DEFAULT_CONCURRENCY = 16;
const DEFAULT_MAX_BYTES = 8 * 1024 * 1024;

export async function scrapePods(pods: readonly EnginePod[], previous: ReadonlyMap<string, EngineSample>, options: ScrapeOptions): Promise<ScrapeResult> {
  const outcomes = await mapConcurrently(pods, options.concurrency ?? DEFAULT_CONCURRENCY, (pod) => scrapePod(pod, options));
  const samples = new Map<string, EngineSample>();
  const intervals: PodInterval[] = [];
  const failures: ScrapeFailure[] = [];
  outcomes.forEach((outcome, index) => {
    const pod = pods[index]!;
    if ("failure" in outcome) {
      failures.push(outcome.failure);
      // Kept so the next good read still has a base: a difference over two intervals is as true.
      const before = previous.get(pod.uid);
      if (before !== undefined) samples.set(pod.uid, before);
      return;
    }
    intervals.push(computeInterval(previous.get(pod.uid), outcome.sample));
    samples.set(pod.uid, outcome.sample);
  });
  return { samples, intervals, failures };
}

type Outcome = { sample: EngineSample } | { failure: ScrapeFailure };

async function scrapePod(pod: EnginePod, options: ScrapeOptions): Promise<Outcome> {
  const fetchFn = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const { url, ...ref } = pod;
  const fail = (reason: ScrapeFailure["reason"], detail: string): Outcome => ({ failure: { pod: ref, reason, detail } });
  let text: string;
  try {
    const response = await fetchFn(`${url.replace(/\/+$/, "")}/metrics`, {
      signal: AbortSignal.timeout(options.timeoutMs),
      headers: { accept: "text/plain" },
    });
    if (response.status === 404) {
      await response.body?.cancel();
      return fail("not-exposed", "GET /metrics answered 404");
    }
    if (!response.ok) {
      await response.body?.cancel();
      return fail("unreachable", `GET /metrics answered ${response.status}`);
    }
    text = await readCapped(response, options.maxBytes ?? DEFAULT_MAX_BYTES);
  } catch (error) {
    return fail("unreachable", describe(error));
  }
  const at = now();
  try {
    const exposition = parseExposition(text);
    return { sample: { pod: ref, at, values: readEngineValues(exposition, pod.engine), ...readEngineIdentity(exposition, pod.engine) } };
  } catch (error) {
    return fail("unreachable", `unparsable /metrics: ${describe(error)}`);
  }
}

async function readCapped(response: Response, maxBytes: number): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let received = 0;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.byteLength;
    if (received > maxBytes) {
      await reader.cancel();
      throw new Error(`/metrics is larger than ${maxBytes} bytes`);
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const code = cause instanceof Error ? ((cause as { code?: string }).code ?? cause.message) : undefined;
    return code ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
