// The scheduler in virtual time with a hand-driven clock: token times are exactly the perf model's
// step times, batches form and share steps, a full KV cache preempts, an abort frees its blocks.
import { describe, expect, it } from "vitest";
import { GPU_PROFILES } from "../../src/domain/gpu-profiles.ts";
import { modelFactsForName } from "../../src/domain/model-sizes.ts";
import { createPerfModel, decodeStepMs, prefillMs, type PerfModel } from "../../src/domain/perf-model.ts";
import { EngineScheduler, type FinishReason, type SchedulerObserver, type Timers } from "../../src/sim/engine-scheduler.ts";

class ManualClock implements Timers {
  private time = 1_000_000;
  private queue: { at: number; seq: number; run: () => void; cancelled: boolean }[] = [];
  private seq = 0;

  now(): number {
    return this.time;
  }

  after(ms: number, run: () => void): () => void {
    const entry = { at: this.time + Math.max(0, ms), seq: this.seq++, run, cancelled: false };
    this.queue.push(entry);
    return () => {
      entry.cancelled = true;
    };
  }

  /** Runs timers in time order until none is left (or `limit` fired). */
  drain(limit = 100_000): void {
    for (let fired = 0; fired < limit; fired++) {
      this.queue = this.queue.filter((entry) => !entry.cancelled);
      if (this.queue.length === 0) return;
      this.queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.queue.shift()!;
      this.time = Math.max(this.time, next.at);
      next.run();
    }
  }
}

interface Trace {
  tokens: number[];
  finish?: { reason: FinishReason; at: number };
}

function observer(): SchedulerObserver & { preemptions: number } {
  return {
    preemptions: 0,
    prefixLookup() {},
    preempted() {
      this.preemptions++;
    },
    prefillBatch() {},
    tokensGenerated() {},
  };
}

function setup(perf: PerfModel, limits = { maxRunning: 256, maxBatchedTokens: 8192, prefixCaching: true }) {
  const clock = new ManualClock();
  const events = observer();
  const scheduler = new EngineScheduler(perf, limits, 1, events, clock);
  const submit = (promptTokens: number, outputTokens: number, encodeMs?: number, remotePrefillMs?: number): Trace => {
    const trace: Trace = { tokens: [] };
    scheduler.submit({
      id: String(Math.random()),
      promptTokens,
      blockHashes: [],
      outputTokens,
      finishReason: "length",
      ...(encodeMs !== undefined && { encodeMs }),
      ...(remotePrefillMs !== undefined && { remotePrefillMs }),
      listener: {
        onToken: (_index, at) => trace.tokens.push(at),
        onFinish: (reason, at) => (trace.finish = { reason, at }),
      },
    });
    return trace;
  };
  return { clock, scheduler, submit, events };
}

const H100_8B = createPerfModel({ model: modelFactsForName("meta-llama/Llama-3.1-8B"), gpu: GPU_PROFILES["nvidia-h100-80gb"] });

describe("EngineScheduler in virtual time", () => {
  it("a lone request's first token comes after exactly its prefill step, the next ones one decode step apart", () => {
    const { clock, submit } = setup(H100_8B);
    const start = clock.now();
    const trace = submit(1000, 4);
    clock.drain();
    expect(trace.tokens[0]! - start).toBeCloseTo(prefillMs(H100_8B, 1000), 6);
    for (let i = 1; i < 4; i++) {
      expect(trace.tokens[i]! - trace.tokens[i - 1]!).toBeCloseTo(decodeStepMs(H100_8B, 1, 1000 + i), 6);
    }
    expect(trace.finish).toEqual({ reason: "length", at: trace.tokens[3] });
  });

  it("a request's image encoding runs in its first prefill step and stalls the decodes sharing it, once", () => {
    const { clock, submit } = setup(H100_8B);
    const decoding = submit(100, 40);
    // Let the first request reach decode, then send one with 50 model-ms of vision encoder.
    clock.drain(6);
    const image = submit(1000, 2, 50);
    clock.drain();
    const gaps = decoding.tokens.slice(1).map((at, i) => at - decoding.tokens[i]!);
    const stalled = gaps.filter((gap) => gap > 50);
    expect(stalled).toHaveLength(1);
    expect(stalled[0]!).toBeGreaterThan(50 + prefillMs(H100_8B, 1000) * 0.9);
    // The image request's own first token carries the same encode, its later ones do not.
    expect(image.tokens[1]! - image.tokens[0]!).toBeLessThan(50);
  });

  it("encoder-only requests (no prefill) share the GPU: two 50 ms encodes admitted together both wait for 100 ms of work", () => {
    const { clock, submit } = setup(H100_8B);
    const start = clock.now();
    const traces = [submit(1000, 1, 50, 0.001), submit(1000, 1, 50, 0.001)];
    clock.drain();
    for (const trace of traces) {
      expect(trace.tokens[0]! - start).toBeGreaterThanOrEqual(100);
      expect(trace.tokens[0]! - start).toBeLessThan(100 + prefillMs(H100_8B, 1000));
    }
  });

  it("requests that arrive together share steps (continuous batching): 8 at once take far less than 8 × one", () => {
    const alone = setup(H100_8B);
    const single = alone.submit(100, 50);
    alone.clock.drain();
    const soloMs = single.finish!.at - (single.tokens[0]! - prefillMs(H100_8B, 100));

    const together = setup(H100_8B);
    const start = together.clock.now();
    const traces = Array.from({ length: 8 }, () => together.submit(100, 50));
    together.clock.drain();
    const lastFinish = Math.max(...traces.map((trace) => trace.finish!.at));
    expect(lastFinish - start).toBeLessThan(2 * soloMs);
    expect(new Set(traces.map((trace) => trace.finish!.at)).size).toBe(1);
  });

  it("past max running sequences, requests wait for a free slot", () => {
    const { clock, submit, scheduler } = setup(H100_8B, { maxRunning: 2, maxBatchedTokens: 8192, prefixCaching: true });
    const traces = Array.from({ length: 3 }, () => submit(10, 5));
    clock.drain(1);
    expect(scheduler.numRunning).toBe(2);
    expect(scheduler.numWaiting).toBe(1);
    clock.drain();
    expect(traces[2]!.tokens[0]!).toBeGreaterThanOrEqual(Math.max(traces[0]!.finish!.at, traces[1]!.finish!.at));
  });

  it("a full KV cache preempts the newest request, which later recomputes and still finishes", () => {
    const tiny: PerfModel = { ...H100_8B, kvBlocks: 10, kvCapacityTokens: 160 };
    const { clock, submit, events, scheduler } = setup(tiny);
    const traces = [submit(60, 60), submit(60, 60)];
    clock.drain();
    expect(events.preemptions).toBeGreaterThan(0);
    expect(traces.map((trace) => trace.finish?.reason)).toEqual(["length", "length"]);
    expect(traces.map((trace) => trace.tokens.length)).toEqual([60, 60]);
    expect(scheduler.pool.usedBlocks).toBe(0);
  });

  it("an abort ends the request at once and frees its blocks", () => {
    const { clock, scheduler } = setup(H100_8B);
    let finished: FinishReason | undefined;
    const handle = scheduler.submit({
      id: "a",
      promptTokens: 500,
      blockHashes: [],
      outputTokens: 1000,
      finishReason: "length",
      listener: { onToken: () => {}, onFinish: (reason) => (finished = reason) },
    });
    clock.drain(5);
    expect(scheduler.numRunning).toBe(1);
    expect(scheduler.pool.usedBlocks).toBeGreaterThan(0);
    handle.abort();
    expect(finished).toBe("abort");
    expect(scheduler.numRunning).toBe(0);
    expect(scheduler.pool.usedBlocks).toBe(0);
  });
});
