// The agent under test in a process of its own, for bench/agent.ts: createAgent exactly as
// `berth agent` builds it (client-node against the simulated cluster, the API client), with
// the configuration the bench passes in argv[2] as JSON. Over IPC it reports its own CPU and
// RSS (`sample`) and, on request, runs the baselines in this same process and client: the
// bare reads a relisting pass needs per deployment, the agent's own observeDeployment, and the
// heartbeat's reads. Started with `node --import tsx bench/support/agent-process.ts '<json>'`.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { type AgentConfig, createAgent } from "../../src/agent/agent.ts";
import { createApiClient } from "../../src/agent/api-client.ts";
import { computeInventory } from "../../src/agent/inventory.ts";
import { createKube } from "../../src/agent/kube.ts";
import { observeDeployment, selectorOf } from "../../src/agent/observe.ts";
import { systemClock } from "../../src/domain/clock.ts";

export interface AgentProcessOptions {
  apiUrl: string;
  token: string;
  /** The simulated cluster's API server, `http://127.0.0.1:<port>`. */
  server: string;
  config: Partial<AgentConfig>;
}

export type AgentRequest =
  | { id: number; type: "sample" }
  | { id: number; type: "reads"; mode: "bare" | "observe" | "heartbeat"; namespace: string; deploymentIds: string[] }
  /** A V8 CPU profile of this process between start and stop, written to `path` (.cpuprofile). */
  | { id: number; type: "profile"; action: "start" | "stop"; path: string }
  | { id: number; type: "stop" };

export interface Sample {
  /** process.cpuUsage(), user + system, ms since the process started. */
  cpuMs: number;
  rssMb: number;
  /** Peak RSS of the process so far (getrusage). */
  maxRssMb: number;
  heapUsedMb: number;
  warnings: number;
}

export interface ReadsResult {
  cpuMs: number;
  wallMs: number;
  requests: number;
  /** Deployments whose reads failed (e.g. a connection reset): counted, not retried. */
  failed: number;
}

const options = JSON.parse(process.argv[2] ?? "{}") as AgentProcessOptions;
const kc = new KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: "sim", server: options.server, skipTLSVerify: true }],
  users: [{ name: "bench" }],
  contexts: [{ name: "sim", cluster: "sim", user: "bench" }],
  currentContext: "sim",
});
const kube = createKube(kc);
const core = kc.makeApiClient(CoreV1Api);

let warnings = 0;
const logger = {
  info: () => {},
  warn: (msg: string, data?: object) => {
    // The first few verbatim; the bench reports the count.
    if (++warnings <= 5) process.stderr.write(`[agent] warn ${msg} ${JSON.stringify(data ?? {})}\n`);
  },
};

const agent = createAgent({
  kube,
  api: createApiClient({ baseUrl: options.apiUrl, token: options.token }),
  clock: systemClock,
  // The bench's pods run no processes (noProcessImages): nothing could answer at an endpoint, so
  // the check before Ready is answered here; the bench measures the agent, not a data path.
  config: { ...options.config, askEndpoint: async () => ({ answered: true, status: 200 }) },
  logger,
});

const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

function sample(): Sample {
  const memory = process.memoryUsage();
  return {
    cpuMs: cpuMs(),
    rssMb: memory.rss / 2 ** 20,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    heapUsedMb: memory.heapUsed / 2 ** 20,
    warnings,
  };
}

/** Every deployment at once, as a resync enqueues them all at once. */
async function reads(mode: "bare" | "observe" | "heartbeat", namespace: string, ids: string[]): Promise<ReadsResult> {
  const cpu0 = cpuMs();
  const t0 = performance.now();
  let requests = 0;
  let outcomes: PromiseSettledResult<unknown>[];
  if (mode === "heartbeat") {
    outcomes = await Promise.allSettled([
      Promise.all([core.listNode(), core.listPodForAllNamespaces({})]).then(([nodes, pods]) => computeInventory(nodes.items, pods.items)),
    ]);
    requests = 2;
  } else if (mode === "observe") {
    // Without the router-only kinds, as the agent observes a deployment that has no router.
    outcomes = await Promise.allSettled(ids.map((id) => observeDeployment(kube, namespace, id, false)));
  } else {
    outcomes = await Promise.allSettled(
      ids.map(async (id) => {
        await core.readNamespace({ name: namespace });
        const labelSelector = selectorOf(id);
        await Promise.all([core.listNamespacedPod({ namespace, labelSelector }), core.listNamespacedService({ namespace, labelSelector })]);
      }),
    );
    requests = ids.length * 3;
  }
  const failed = outcomes.filter((o) => o.status === "rejected").length;
  return { cpuMs: cpuMs() - cpu0, wallMs: performance.now() - t0, requests, failed };
}

let profiler: Session | undefined;

async function profile(action: "start" | "stop", path: string): Promise<void> {
  if (action === "start") {
    profiler = new Session();
    profiler.connect();
    await profiler.post("Profiler.enable");
    await profiler.post("Profiler.start");
    return;
  }
  if (!profiler) return;
  const { profile } = await profiler.post("Profiler.stop");
  writeFileSync(path, JSON.stringify(profile));
  profiler.disconnect();
  profiler = undefined;
}

process.on("message", (message: AgentRequest) => {
  const reply = (body: object) => process.send!({ id: message.id, ...body });
  switch (message.type) {
    case "sample":
      return reply(sample());
    case "reads":
      return void reads(message.mode, message.namespace, message.deploymentIds).then(
        (result) => reply(result),
        (error: Error) => reply({ error: error.message }),
      );
    case "profile":
      return void profile(message.action, message.path).then(
        () => reply({}),
        (error: Error) => reply({ error: error.message }),
      );
    case "stop":
      return void agent.stop().then(() => {
        reply({});
        setImmediate(() => process.exit(0));
      });
  }
});

agent.start();
// The ready message carries a sample: what the process costs before any work (imports, clients).
process.send!({ id: 0, ready: true, ...sample() });
