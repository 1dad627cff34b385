// vLLM's elastic expert parallelism resize (`POST /scale_elastic_ep`, vLLM `vllm/entrypoints/serve/elastic_ep/api_router.py`, docs/design.md §12.1): the call
// blocks until the new width serves; meanwhile `runtime.scaling` makes every path answer 503.
// Afterwards each new rank has its own batch and KV capacity, and every vllm: series restarts.
// SIM_ELASTIC_FAULT (elastic-faults.ts) may refuse a size-changing call or withhold its answer.
import { planScaleCall } from "./elastic-faults.ts";
import type { SimRuntime } from "./runtime.ts";
import { MAX_DATA_PARALLEL } from "./runtime.ts";

export interface ScaleOutcome {
  status: 200 | 400 | 408 | 500;
  body: Record<string, unknown>;
}

/** A hang-first fault: the call gets no answer at all (the handler holds the connection until the client leaves). */
export const NO_ANSWER = "no-answer";

const PHRASES: Readonly<Record<number, string>> = { 400: "Bad Request", 408: "Request Timeout", 500: "Internal Server Error" };

/** FastAPI HTTPException as vLLM's handler renders it: the error envelope with the status phrase as type. */
function httpError(status: 400 | 408 | 500, message: string): ScaleOutcome {
  return { status, body: { error: { message, type: PHRASES[status], param: null, code: status } } };
}

export function readScaleRequest(raw: string): { newSize: number; drainTimeout: number } | ScaleOutcome {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return httpError(400, "Invalid JSON format");
  }
  if (!body || typeof body !== "object") return httpError(400, "Invalid JSON format");
  const { new_data_parallel_size: size, drain_timeout: drain = 120 } = body as Record<string, unknown>;
  if (size === undefined) return httpError(400, "new_data_parallel_size is required");
  if (typeof size !== "number" || !Number.isInteger(size) || size <= 0) return httpError(400, "new_data_parallel_size must be a positive integer");
  if (typeof drain !== "number" || !Number.isInteger(drain) || drain <= 0) return httpError(400, "drain_timeout must be a positive integer");
  return { newSize: size, drainTimeout: drain };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function scaleElasticEp(rt: SimRuntime, newSize: number, drainTimeoutS: number): Promise<ScaleOutcome | typeof NO_ANSWER> {
  const { core, log } = rt;
  if (rt.args.dataParallelBackend !== "ray" || rt.args.dataParallelRank !== undefined) {
    // Only the Ray DP backend with one API server can scale (core_client asserts); vLLM answers 500.
    log.error({ backend: rt.args.dataParallelBackend }, "berth-sim: Only ray DP backend supports scaling elastic EP");
    return httpError(500, "Scale failed");
  }
  if (newSize === core.size) return { status: 200, body: { message: `Scaled to ${newSize} data parallel engines` } };
  if (newSize > MAX_DATA_PARALLEL) {
    log.error({ newSize, max: MAX_DATA_PARALLEL }, "berth-sim: not enough simulated Ray capacity for that many ranks");
    return httpError(500, "Scale failed");
  }
  const call = rt.elasticScaleCalls++;
  const plan = planScaleCall(rt.env.elasticFaults, call);
  const fault = { fault: "SIM_ELASTIC_FAULT", call: call + 1, from: core.size, to: newSize };
  switch (plan) {
    case "refuse":
      log.error(fault, "berth-sim: injected fault: refusing the resize with 500 Scale failed");
      return httpError(500, "Scale failed");
    case "stay-silent":
      log.warn(fault, "berth-sim: injected fault: swallowing the resize (no scale, no answer)");
      return NO_ANSWER;
    case "scale-silently": {
      const outcome = await resize(rt, newSize, drainTimeoutS);
      log.warn({ ...fault, status: outcome.status }, "berth-sim: injected fault: withholding the resize's answer");
      return NO_ANSWER;
    }
    case "scale":
      return resize(rt, newSize, drainTimeoutS);
  }
}

async function resize(rt: SimRuntime, newSize: number, drainTimeoutS: number): Promise<ScaleOutcome> {
  const { core, log } = rt;
  const from = core.size;
  rt.scaling = true;
  log.info({ from, to: newSize }, `berth-sim: scaling elastic EP from ${from} to ${newSize} data parallel engines`);
  try {
    if (rt.env.elasticDrain) {
      const limitMs = drainTimeoutS * 1000 * Math.max(rt.sim.timeScale, 0.001);
      const drained = await Promise.race([core.whenIdle().then(() => true), sleep(limitMs).then(() => false)]);
      if (!drained) return httpError(408, `Scale failed due to request drain timeout after ${drainTimeoutS} seconds`);
    }
    await sleep(rt.sim.elasticScaleSeconds * 1000 * rt.sim.timeScale);
    core.resize(newSize);
    rt.dataParallelTotal = newSize;
    rt.metrics.reset(core.rankIds);
    log.info({ dataParallelSize: newSize }, `berth-sim: Scaled to ${newSize} data parallel engines`);
    return { status: 200, body: { message: `Scaled to ${newSize} data parallel engines` } };
  } finally {
    rt.scaling = false;
  }
}
