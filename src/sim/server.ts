// The simulator's HTTP surface, per engine flavour: OpenAI routes, health and info endpoints,
// /metrics, vLLM's elastic-EP routes and SGLang's admin routes. Middleware labels every response
// `x-berth-simulated: true`, applies the engine's API-key scope, and answers 503 on every path
// while an elastic resize runs, as vLLM's ScalingMiddleware does.
import { Hono, type Context } from "hono";
import { NO_ANSWER, readScaleRequest, scaleElasticEp } from "./elastic.ts";
import { errorResponse, handleGenerate } from "./generate.ts";
import { sglangHealth } from "./lifecycle.ts";
import { RequestError } from "./openai.ts";
import type { SimRuntime } from "./runtime.ts";

const SIM_VERSION = "berth-sim";

export function createSimApp(rt: SimRuntime): Hono {
  const app = new Hono();
  const { args } = rt;

  app.use("*", async (c, next) => {
    if (rt.scaling) {
      c.res = Response.json({ error: "The model is currently scaling. Please try again later." }, { status: 503 });
    } else if (!authorized(rt, c)) {
      c.res = Response.json({ error: "Unauthorized" }, { status: 401 });
    } else {
      await next();
    }
    try {
      c.res.headers.set("x-berth-simulated", "true");
    } catch {
      c.res = new Response(c.res.body, { status: c.res.status, headers: { ...Object.fromEntries(c.res.headers), "x-berth-simulated": "true" } });
    }
  });

  const worker = args.flavour === "sglang" && args.nodeRank > 0;
  if (!worker) {
    app.post("/v1/completions", (c) => handleGenerate(rt, "completion", c));
    app.post("/v1/chat/completions", (c) => handleGenerate(rt, "chat", c));
    app.get("/v1/models", (c) => c.json(modelList(rt)));
  }
  app.get("/metrics", async (c) => {
    if (!rt.metrics.enabled) return c.text("Not Found", 404);
    const { contentType, body } = await rt.metrics.render();
    return c.body(body, 200, { "content-type": contentType });
  });

  if (args.flavour === "vllm") addVllmRoutes(app, rt);
  else if (args.nodeRank > 0) addSglangWorkerRoutes(app);
  else addSglangRoutes(app, rt);

  app.notFound((c) => c.json({ detail: "Not Found" }, 404));
  app.onError((error, c) => {
    rt.log.error({ err: error.message, path: c.req.path }, "berth-sim: request failed");
    return errorResponse(rt, new RequestError(500, "Internal server error"));
  });
  return app;
}

/** vLLM guards only /v1, /v2 and /inference; SGLang everything but /health* and /metrics. */
function authorized(rt: SimRuntime, c: Context): boolean {
  if (rt.args.apiKeys.length === 0) return true;
  const path = c.req.path;
  const guarded =
    rt.args.flavour === "vllm"
      ? ["/v1", "/v2", "/inference"].some((prefix) => path === prefix || path.startsWith(prefix + "/"))
      : !path.startsWith("/health") && path !== "/metrics" && c.req.method !== "OPTIONS";
  if (!guarded) return true;
  const header = c.req.header("authorization") ?? "";
  return rt.args.apiKeys.some((key) => header === `Bearer ${key}`);
}

function modelList(rt: SimRuntime): Record<string, unknown> {
  const created = Math.floor(rt.startedAt / 1000);
  return {
    object: "list",
    data: rt.args.servedModelNames.map((id) => ({
      id,
      object: "model",
      created,
      owned_by: "berth-sim",
      root: rt.args.flavour === "vllm" ? rt.args.model : id,
      parent: null,
      max_model_len: rt.maxModelLen,
      permission: [
        {
          id: `modelperm-berthsim${created}`,
          object: "model_permission",
          created,
          allow_create_engine: false,
          allow_sampling: true,
          allow_logprobs: true,
          allow_search_indices: false,
          allow_view: true,
          allow_fine_tuning: false,
          organization: "*",
          group: null,
          is_blocking: false,
        },
      ],
    })),
  };
}

function addVllmRoutes(app: Hono, rt: SimRuntime): void {
  // No draining or starting state: 200 while the engine lives (connections are refused before).
  app.get("/health", (c) => c.body(null, 200));
  app.on(["GET", "POST"], "/ping", (c) => c.body(null, 200));
  app.get("/version", (c) => c.json({ version: SIM_VERSION }));
  app.get("/load", (c) => c.json({ server_load: rt.args.enableServerLoadTracking ? rt.inFlight.size : 0 }));
  app.post("/scale_elastic_ep", async (c) => {
    const request = readScaleRequest(await c.req.text());
    if ("status" in request) return c.json(request.body, request.status);
    const outcome = await scaleElasticEp(rt, request.newSize, request.drainTimeout);
    if (outcome === NO_ANSWER) return untilClientLeaves(c.req.raw.signal);
    return c.json(outcome.body, outcome.status);
  });
  app.post("/is_scaling_elastic_ep", (c) => c.json({ is_scaling_elastic_ep: rt.scaling }));
  if (rt.env.vllmDevMode) {
    app.get("/server_info", (c) => c.json(serverInfo(rt)));
    app.post("/reset_prefix_cache", (c) => {
      rt.core.resetPrefixCache();
      return c.body(null, 200);
    });
  }
}

/**
 * Holds a request open without answering until its connection closes: the client gives up, or shutdown
 * closes every connection (the signal aborts then too). A pending promise keeps no timer or handle, so it
 * never holds the process or the drain open.
 */
function untilClientLeaves(signal: AbortSignal): Promise<Response> {
  const gone = () => new Response(null, { status: 499 });
  if (signal.aborted) return Promise.resolve(gone());
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(gone()), { once: true }));
}

/** vLLM's dev-mode /server_info, trimmed to what the simulator knows. */
function serverInfo(rt: SimRuntime): Record<string, unknown> {
  const { args, sim } = rt;
  return {
    vllm_config: {
      model_config: { model: args.model, served_model_name: rt.modelName, max_model_len: rt.maxModelLen },
      parallel_config: {
        tensor_parallel_size: args.tensorParallel,
        pipeline_parallel_size: args.pipelineParallel,
        data_parallel_size: rt.dataParallelTotal,
        data_parallel_backend: args.dataParallelBackend,
        enable_elastic_ep: args.enableElasticEp,
      },
      cache_config: { block_size: args.blockSize, num_gpu_blocks: rt.perf.kvBlocks, gpu_memory_utilization: args.gpuMemoryUtilization },
      kv_transfer_config: args.kvTransfer ?? null,
    },
    berth_sim: { gpu_type: sim.gpuType, latency_profile: sim.latencyProfile, size_class: rt.perf.model.sizeClass },
    vllm_env: {},
    system_env: {},
  };
}

function addSglangRoutes(app: Hono, rt: SimRuntime): void {
  app.get("/health", async (c) => c.body(null, (await sglangHealth(rt, false)) as 200 | 503));
  app.get("/health_generate", async (c) => c.body(null, (await sglangHealth(rt, true)) as 200 | 503));
  app.get("/ping", (c) => c.body(null, 200));
  const modelInfo = (c: Context) =>
    c.json({
      model_path: rt.args.model,
      tokenizer_path: rt.args.model,
      is_generation: true,
      preferred_sampling_params: null,
      weight_version: "default",
      has_image_understanding: false,
      has_audio_understanding: false,
      model_type: "berth-sim",
      architectures: ["BerthSimForCausalLM"],
    });
  app.get("/model_info", modelInfo);
  app.get("/get_model_info", modelInfo);
  const info = (c: Context) => c.json(sglangServerInfo(rt));
  app.get("/server_info", info);
  app.get("/get_server_info", info);
  const loads = (c: Context) => c.json(sglangLoads(rt));
  app.get("/v1/loads", loads);
  app.get("/get_load", loads);
  app.on(["GET", "POST"], "/flush_cache", (c) => {
    if (rt.core.inFlight > 0) return c.text("Cache not flushed. Please check for pending requests.", 400);
    rt.core.resetPrefixCache();
    return c.text("Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n", 200);
  });
}

/** SGLang nodes with --node-rank ≥ 1 run no HTTP server of their own, only a dummy health check. */
function addSglangWorkerRoutes(app: Hono): void {
  for (const path of ["/health", "/health_generate", "/ping"]) app.get(path, (c) => c.body(null, 200));
}

function sglangServerInfo(rt: SimRuntime): Record<string, unknown> {
  const { args, sim } = rt;
  return {
    model_path: args.model,
    served_model_name: rt.modelName,
    host: args.host,
    port: args.port,
    tp_size: args.tensorParallel,
    pp_size: args.pipelineParallel,
    dp_size: rt.dataParallelTotal,
    disaggregation_mode: args.disaggregationMode,
    disaggregation_bootstrap_port: args.bootstrapPort,
    disaggregation_transfer_backend: args.transferBackend,
    enable_metrics: args.enableMetrics,
    mem_fraction_static: args.gpuMemoryUtilization,
    context_length: rt.maxModelLen,
    max_total_num_tokens: rt.perf.kvCapacityTokens,
    internal_states: rt.core.states().map((state) => ({ dp_rank: state.rank, num_running_reqs: state.running, num_waiting_reqs: state.waiting })),
    version: SIM_VERSION,
    berth_sim: { gpu_type: sim.gpuType, latency_profile: sim.latencyProfile, size_class: rt.perf.model.sizeClass },
  };
}

function sglangLoads(rt: SimRuntime): Record<string, unknown> {
  const states = rt.core.states();
  return {
    timestamp: Date.now() / 1000,
    dp_rank_count: states.length,
    loads: states.map((state) => ({
      dp_rank: state.rank,
      num_running_reqs: state.running,
      num_waiting_reqs: state.waiting,
      num_total_reqs: state.running + state.waiting + state.transferring,
      num_used_tokens: state.usedTokens,
      max_total_num_tokens: state.capacityTokens,
      token_usage: state.kvUsage,
      gen_throughput: state.genThroughput,
      cache_hit_rate: state.cacheHitRate,
      disagg_mode: rt.args.disaggregationMode,
    })),
  };
}
