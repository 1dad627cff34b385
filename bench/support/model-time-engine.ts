// The engine simulator for bench/scaling.ts, reporting in model time. The bench compresses time
// by C (`--latency-profile 1/C`), so the simulator's latencies are C times shorter than the model
// says; this wrapper multiplies the latencies the engine reports (the TTFT, ITL, e2e and queue
// histograms the agent reads) by C, so that berth's sla algorithm and the bench see model time (the
// agent runs with `metricsTimeScale: C`, so the rates it takes from counters are per model second
// too: a rate times a latency is then a concurrency, as on a real engine).
// It also writes exact TTFT and ITL samples (model ms) per 500 ms wall window to a file for the
// bench. Usage: node --import tsx model-time-engine.ts <samples-dir> <C> <sim-engine argv…>
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runSimEngine } from "../../src/sim/cli.ts";
import { createVllmMetrics } from "../../src/sim/metrics.ts";

/** Attainment windows are 10 s of model time: 10 000 ÷ C ms of wall time. */
export const WINDOW_MODEL_SECONDS = 10;
export const sampleWindowMs = (compression: number) => (WINDOW_MODEL_SECONDS * 1000) / compression;
/** ITL samples go into log buckets 1 % wide (exact enough for a p95, small enough to write). */
export const ITL_BUCKET_BASE = 1.01;

// bench/scaling.ts imports the constants above; only a process started on this file runs the engine.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir, scaleText, ...rest] = process.argv.slice(2);
  const C = Number(scaleText);
  if (!dir || !(C > 0)) throw new Error("usage: model-time-engine.ts <samples-dir> <compression> <sim-engine argv…>");
  const windowMs = sampleWindowMs(C);

  interface Window {
    ttft: number[];
    itl: Map<number, number>;
  }
  const windows = new Map<number, Window>();
  const file = join(dir, `engine-${process.pid}.jsonl`);
  const windowOf = (): Window => {
    const key = Math.floor(Date.now() / windowMs);
    let w = windows.get(key);
    if (!w) windows.set(key, (w = { ttft: [], itl: new Map() }));
    return w;
  };
  function flush(all: boolean): void {
    const current = Math.floor(Date.now() / windowMs);
    let out = "";
    for (const [key, w] of windows) {
      if (!all && key >= current) continue;
      out += JSON.stringify({ window: key, ttftMs: w.ttft, itl: [...w.itl] }) + "\n";
      windows.delete(key);
    }
    if (out) appendFileSync(file, out);
  }
  setInterval(() => flush(false), 1000).unref();
  process.on("exit", () => flush(true));

  // Patch the vLLM metrics class through an instance (the class itself is not exported).
  const probe = createVllmMetrics({ modelName: "probe", ranks: [0], states: () => [], blockSize: 16, numGpuBlocks: 1, gpuMemoryUtilization: 0.9, prefixCaching: false, kvConnector: false, maxModelLen: 1 });
  const proto = Object.getPrototypeOf(probe) as Record<string, (...args: any[]) => void>;
  const { firstToken, interToken, requestFinished } = proto;
  proto.firstToken = function (rank: number, seconds: number) {
    windowOf().ttft.push(Math.round(seconds * C * 1e5) / 100);
    firstToken!.call(this, rank, seconds * C);
  };
  proto.interToken = function (rank: number, seconds: number) {
    const ms = seconds * C * 1000;
    const bucket = ms > 0 ? Math.round(Math.log(ms) / Math.log(ITL_BUCKET_BASE)) : -1000;
    const itl = windowOf().itl;
    itl.set(bucket, (itl.get(bucket) ?? 0) + 1);
    interToken!.call(this, rank, seconds * C);
  };
  proto.requestFinished = function (record: { e2eSeconds: number; queueSeconds: number }) {
    requestFinished!.call(this, { ...record, e2eSeconds: record.e2eSeconds * C, queueSeconds: record.queueSeconds * C });
  };

  await runSimEngine(rest);
}
