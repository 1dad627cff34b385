// Start-up, health and SIGTERM as each engine does them (vLLM `vllm/entrypoints/launcher.py`, SGLang `http_server.py`; docs/design.md §12).
// vLLM: listens only once ready; /health is 200 throughout a drain; SIGTERM aborts in-flight requests
// (finish_reason "abort") unless --shutdown-timeout N > 0, which drains for up to N s and refuses new
// requests. SGLang: /health is 503 until warm-up and while draining, otherwise a one-token generation
// taking ≥ 1 s; SIGTERM drains with no bound, checked every 5 s, then exits 0.
import type { FinishReason } from "./engine-scheduler.ts";
import type { SimRuntime } from "./runtime.ts";

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A one-token request straight to the scheduler (SGLang's warm-up and health probe): resolves when it finished. */
export function probeGeneration(rt: SimRuntime): Promise<FinishReason> {
  return new Promise((resolve) => {
    rt.core.submit(rt.core.pickRank(), {
      id: `HEALTH_CHECK_${Date.now()}`,
      promptTokens: 1,
      blockHashes: [],
      outputTokens: 1,
      finishReason: "length",
      listener: { onToken: () => {}, onFinish: (reason) => resolve(reason) },
    });
  });
}

/** SGLang's /health (= /health_generate): 503 while starting or draining, else a timed generation. */
export async function sglangHealth(rt: SimRuntime, alwaysGenerate: boolean): Promise<number> {
  if (rt.phase !== "ready") return 503;
  if (!alwaysGenerate && !rt.env.sglangHealthGeneration) return 200;
  const scale = rt.sim.timeScale;
  // It sleeps one second before its first look for output, so a healthy answer takes ≥ 1 s.
  const probe = probeGeneration(rt);
  const timeout = sleep(rt.env.sglangHealthTimeoutS * 1000 * Math.max(scale, 0.001)).then(() => "timeout" as const);
  const [result] = await Promise.all([Promise.race([probe, timeout]), sleep(1000 * scale)]);
  if (result === "timeout" || result === "abort") {
    rt.log.warn({}, "berth-sim: health check generation did not finish; reporting unhealthy");
    return 503;
  }
  return rt.phase === "ready" ? 200 : 503;
}

export interface Closable {
  close(): Promise<void>;
}

/**
 * Installs the engine's SIGTERM (and SIGINT) behaviour. A second signal stops at once.
 * `exit` ends the process; tests of this module pass their own.
 */
export function installShutdown(rt: SimRuntime, listeners: Closable[], exit: (code: number) => void): void {
  let signals = 0;
  const stopNow = async (code: number) => {
    rt.phase = "stopping";
    rt.core.abortAll();
    // Let aborted answers reach their clients before the sockets close.
    await sleep(100);
    rt.core.stop();
    await Promise.race([Promise.all(listeners.map((listener) => listener.close())), sleep(1000)]);
    exit(code);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1 || rt.phase === "starting") {
      rt.log.info({ signal }, "berth-sim: second signal, stopping now");
      void stopNow(0);
      return;
    }
    if (rt.args.flavour === "vllm") void vllmShutdown(rt, signal, stopNow);
    else void sglangShutdown(rt, signal, stopNow);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

async function vllmShutdown(rt: SimRuntime, signal: string, stopNow: (code: number) => Promise<void>): Promise<void> {
  const timeout = rt.args.shutdownTimeout;
  if (timeout <= 0) {
    rt.log.info({ signal, inFlight: rt.inFlight.size }, "berth-sim (vllm): shutting down, aborting in-flight requests (--shutdown-timeout 0)");
    await stopNow(0);
    return;
  }
  rt.phase = "draining";
  rt.log.info({ signal, inFlight: rt.inFlight.size }, `berth-sim (vllm): Draining ${rt.inFlight.size} in-flight requests (up to ${timeout} s)`);
  const deadline = Date.now() + timeout * 1000;
  while (rt.inFlight.size > 0 && Date.now() < deadline) await sleep(Math.min(50, deadline - Date.now()));
  if (rt.inFlight.size > 0) rt.log.warn({ inFlight: rt.inFlight.size }, "berth-sim (vllm): shutdown timeout reached, aborting the rest");
  await stopNow(0);
}

async function sglangShutdown(rt: SimRuntime, signal: string, stopNow: (code: number) => Promise<void>): Promise<void> {
  rt.phase = "draining";
  rt.log.info({ signal, inFlight: rt.inFlight.size }, "berth-sim (sglang): SIGTERM received, draining with no time limit (/health answers 503)");
  // sigterm_watchdog polls every 5 s (scaled with the latency profile here).
  const interval = Math.max(20, 5000 * rt.sim.timeScale);
  while (rt.inFlight.size > 0) {
    rt.log.info({ remaining: rt.inFlight.size }, `berth-sim (sglang): Gracefully exiting... Remaining number of requests ${rt.inFlight.size}`);
    await sleep(interval);
  }
  await stopNow(0);
}
