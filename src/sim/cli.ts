// `berth sim-engine [flags] -- <vllm|sglang command line>`: the composition root of the engine
// simulator. Parses once, builds the runtime, binds (BERTH_POD_IP when told 0.0.0.0 or ::), starts
// SGLang's bootstrap listener for prefill servers, and installs the engine's signal behaviour.
// It imports nothing of the API or database, so it answers /health well within 3 s of starting.
import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { parseSimCommand, SIM_USAGE, UsageError, type SimCommand } from "./args.ts";
import { installShutdown, probeGeneration, type Closable } from "./lifecycle.ts";
import { startBootstrapServer } from "./pd.ts";
import { createSimRuntime, type SimRuntime } from "./runtime.ts";
import { createSimApp } from "./server.ts";

/** Engines told to listen everywhere bind the pod's own address in the simulated cluster. */
export function bindAddress(host: string, podIp: string | undefined): string {
  const everywhere = host === "" || host === "0.0.0.0" || host === "::" || host === "[::]";
  if (everywhere && podIp) return podIp;
  return host === "" ? "0.0.0.0" : host.replace(/^\[(.*)\]$/, "$1");
}

function urlHost(address: string): string {
  return address.includes(":") ? `[${address}]` : address;
}

function listen(rt: SimRuntime, hostname: string, port: number): Promise<{ server: ServerType; port: number }> {
  const app = createSimApp(rt);
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname, port }, (info: AddressInfo) => resolve({ server, port: info.port }));
    server.once("error", reject);
  });
}

function closable(server: ServerType): Closable {
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ("closeAllConnections" in server) server.closeAllConnections();
      }),
  };
}

export async function runSimEngine(argv: string[]): Promise<void> {
  const own = argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv;
  if (own.includes("--help") || own.includes("-h")) {
    process.stdout.write(SIM_USAGE);
    return;
  }
  let command: SimCommand;
  try {
    command = parseSimCommand(argv, process.env);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`berth sim-engine: ${error.message}\n${SIM_USAGE}`);
      process.exit(2);
    }
    throw error;
  }
  const { sim, engine: args } = command;
  const log = pino({
    base: { component: "berth-sim-engine", simulated: true, engine: args.flavour, pid: process.pid },
    level: process.env.LOG_LEVEL ?? "info",
  });
  const rt = createSimRuntime(command, process.env, log);
  log.info(
    {
      model: args.model,
      servedModelName: rt.modelName,
      sizeClass: rt.perf.model.sizeClass,
      gpuType: sim.gpuType,
      tensorParallel: args.tensorParallel,
      dataParallel: args.dataParallel,
      kvCacheTokens: rt.perf.kvCapacityTokens,
      latencyProfile: sim.zeroLatency ? "zero-latency" : sim.latencyProfile,
      ignoredFlags: args.ignoredFlags,
      ...(rt.ec && { ecRole: rt.ec.role, ecConnector: rt.ec.connector, ecStoragePath: rt.ec.storagePath }),
    },
    `berth-sim: simulating ${args.flavour} (no GPU, no model weights)`,
  );
  const exit = (code: number) => {
    log.info({ code }, "berth-sim: exiting");
    process.exit(code);
  };
  const listeners: Closable[] = [];
  installShutdown(rt, listeners, exit);

  if (args.headless) {
    // A headless vLLM node runs engines only and never opens HTTP.
    rt.phase = "ready";
    log.info({}, "berth-sim (vllm): --headless, no API server");
    setInterval(() => {}, 1 << 30);
    return;
  }

  const hostname = bindAddress(args.host, process.env.BERTH_POD_IP);
  if (rt.rooms && args.nodeRank === 0) {
    const bootstrap = await startBootstrapServer(hostname, args.bootstrapPort, rt.rooms);
    listeners.push(bootstrap);
    log.info({ bootstrapPort: bootstrap.port, url: `http://${urlHost(hostname)}:${bootstrap.port}` }, `berth-sim (sglang): disaggregation bootstrap server on port ${bootstrap.port}`);
  }
  // vLLM accepts connections only once the engine is ready; SGLang listens, then warms up.
  if (args.flavour === "vllm") rt.phase = "ready";
  const { server, port } = await listen(rt, hostname, args.port);
  listeners.push(closable(server));
  const url = `http://${urlHost(hostname)}:${port}`;
  if (args.flavour === "sglang") {
    if (!args.skipServerWarmup) await probeGeneration(rt);
    rt.phase = "ready";
  }
  log.info({ url, port, startupMs: Date.now() - rt.startedAt }, `berth-sim (simulated ${args.flavour}): listening on ${url}`);
}
