// `berth up`: the whole system on one machine — the API (PGlite in $BERTH_DATA_DIR unless
// DATABASE_URL says otherwise), a simulated Kubernetes cluster (k8s/sim) whose pods run the
// engine simulator and the router, and an agent registered to it. The composition root: it
// parses configuration once, reuses its cluster and agent credential across restarts, and on
// SIGTERM/SIGINT kills the simulated pods at once and exits within 3 s.
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { DEFAULT_EC_CACHE_SIZE } from "../../k8s/render/index.ts";
import { berthPrograms, SIM_STORAGE_CLASSES, type SimCluster, type SimNode, startSimCluster } from "../../k8s/sim/index.ts";
import { createAgent, type Agent, type Logger } from "../agent/agent.ts";
import { type AgentApi, createApiClient, registerAgent } from "../agent/api-client.ts";
import { createKube } from "../agent/kube.ts";
import type { Config } from "../api/config.ts";
import { type RunningServer, startServer } from "../api/serve-node.ts";
import { systemClock } from "../domain/clock.ts";
import { GPU_TYPES } from "../domain/gpu-profiles.ts";
import { parseCommandArgs, parsePort, UsageError } from "./args.ts";
import { readUpState, resetUpData, updateUpState, upBannerPath, upKubeconfigPath, type UpState, writeUpBanner, writeUpState } from "./up-state.ts";

export const UP_USAGE = `usage: berth up [--reset] [--port N] [--verbose] [--nodes N] [--gpus-per-node N] [--gpu-type ID] [--time-scale X]

Runs the API, a simulated GPU cluster and an agent in one process tree (Ctrl-C stops all).
Prints start-up lines, warnings and errors, then the API URL, admin token and kubeconfig
last (also written to $BERTH_DATA_DIR/up.txt, default ./.berth/up.txt).
  --reset            start empty: forget the embedded database, the cluster and its credential
  --port N           the API's port (default PORT, else 8787)
  --verbose          log every API request and the agent's actions (as LOG_LEVEL=info does)
  --nodes N          simulated GPU nodes (default 2)
  --gpus-per-node N  GPUs per node (default 8)
  --gpu-type ID      the nodes' GPU type (default nvidia-h100-80gb)
  --time-scale X     multiplies probe periods and backoffs in the simulated cluster (default 0.2)
Configuration as for \`berth serve\`: PORT, HOST, BERTH_DATA_DIR, BERTH_ADMIN_TOKEN, LOG_LEVEL, …
The simulated cluster keeps its API server port and pod/Service addresses across restarts.`;

const CLUSTER_NAME = "local";
const ROUTER_IMAGE = "ghcr.io/berth/berth:0.1.0";
/** The issue's bound is 3 s from the signal to exit; leave margin for the process itself. */
const STOP_DEADLINE_MS = 2_500;

export interface UpOptions {
  reset: boolean;
  nodes: SimNode[];
  timeScale: number;
  /** --port: the API's port, over PORT. */
  port?: number;
  verbose: boolean;
}

export function parseUpArgs(args: string[]): UpOptions {
  const { values } = parseCommandArgs(args, {
    name: "berth up",
    usage: UP_USAGE,
    options: {
      reset: { type: "boolean", default: false },
      port: { type: "string" },
      verbose: { type: "boolean", default: false },
      nodes: { type: "string", default: "2" },
      "gpus-per-node": { type: "string", default: "8" },
      "gpu-type": { type: "string", default: "nvidia-h100-80gb" },
      "time-scale": { type: "string", default: "0.2" },
    },
  });
  const usage = (message: string) => new UsageError(message, UP_USAGE);
  const integer = (name: string, text: string, max: number) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1 || value > max) throw usage(`--${name} must be an integer from 1 to ${max} (got ${text})`);
    return value;
  };
  const count = integer("nodes", values.nodes, 64);
  const gpus = integer("gpus-per-node", values["gpus-per-node"], 16);
  const gpuType = values["gpu-type"];
  if (!(GPU_TYPES as readonly string[]).includes(gpuType)) throw usage(`--gpu-type must be one of ${GPU_TYPES.join(", ")} (got ${gpuType})`);
  const timeScale = Number(values["time-scale"]);
  if (!Number.isFinite(timeScale) || timeScale <= 0 || timeScale > 10) throw usage(`--time-scale must be a number in (0, 10] (got ${values["time-scale"]})`);
  const nodes = Array.from({ length: count }, (_, i) => ({ name: `sim-gpu-${i}`, gpuType, gpus }));
  const port = parsePort(values.port, UP_USAGE);
  return { reset: values.reset, nodes, timeScale, verbose: values.verbose, ...(port === undefined ? {} : { port }) };
}

/**
 * Quiet by default: warnings and errors only from the API and the agent (up prints its own
 * start-up lines). --verbose, or LOG_LEVEL set explicitly, brings request logs back.
 */
export function upLogLevel(options: Pick<UpOptions, "verbose">, config: Pick<Config, "logLevel">, env: Record<string, string | undefined>): Config["logLevel"] {
  if (options.verbose) return config.logLevel === "trace" || config.logLevel === "debug" ? config.logLevel : "info";
  return env.LOG_LEVEL ? config.logLevel : "warn";
}

/**
 * A development install: webhooks may go to receivers on this machine (private addresses) and
 * over http, unless BERTH_WEBHOOK_ALLOW_PRIVATE / BERTH_WEBHOOK_ALLOW_HTTP say otherwise.
 */
export function upWebhookPolicy(
  config: Pick<Config, "webhookAllowPrivate" | "webhookAllowHttp">,
  env: Record<string, string | undefined>,
): Pick<Config, "webhookAllowPrivate" | "webhookAllowHttp"> {
  return {
    webhookAllowPrivate: env.BERTH_WEBHOOK_ALLOW_PRIVATE ? config.webhookAllowPrivate : true,
    webhookAllowHttp: env.BERTH_WEBHOOK_ALLOW_HTTP ? config.webhookAllowHttp : true,
  };
}

/** A JSON-lines logger for the in-process agent, at the configured level. */
function agentLogger(level: Config["logLevel"]): Logger {
  const write = (lvl: string, msg: string, data?: object) => process.stderr.write(JSON.stringify({ level: lvl, service: "berth-agent", msg, ...data }) + "\n");
  const rank = ["trace", "debug", "info", "warn", "error", "silent"].indexOf(level);
  return {
    info: (msg, data) => rank <= 2 && write("info", msg, data),
    warn: (msg, data) => rank <= 3 && write("warn", msg, data),
  };
}

async function adminCall(url: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(new URL(path, url), {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

/**
 * The saved cluster and credential when the API still knows them and accepts the credential
 * (a desired-state read with no wait has no side effect); otherwise a new cluster, registered
 * with a fresh join token. A lost state file leaves the old cluster's name taken: the next free
 * `local-<n>` is used (deployments pinned to the old cluster stay with it).
 */
async function ensureCluster(url: string, adminToken: string, state: UpState): Promise<{ clusterId: string; agentToken: string; name: string }> {
  if (state.clusterId && state.agentToken) {
    const known = await adminCall(url, adminToken, "GET", `/v1/clusters/${encodeURIComponent(state.clusterId)}`);
    const probe = await fetch(new URL("/v1/agent/desired?since=0&waitSeconds=0", url), { headers: { Authorization: `Bearer ${state.agentToken}` } });
    await probe.body?.cancel();
    if (known.status === 200 && probe.ok) return { clusterId: state.clusterId, agentToken: state.agentToken, name: String(known.body!.name) };
  }
  for (let attempt = 1; attempt <= 20; attempt++) {
    const name = attempt === 1 ? CLUSTER_NAME : `${CLUSTER_NAME}-${attempt}`;
    const created = await adminCall(url, adminToken, "POST", "/v1/clusters", { name });
    if (created.status === 409) continue;
    if (created.status !== 201) throw new Error(`could not create the local cluster: ${created.status} ${JSON.stringify(created.body)}`);
    const { clusterId, token } = await registerAgent(url, created.body!.joinToken as string);
    return { clusterId, agentToken: token, name };
  }
  throw new Error(`clusters "${CLUSTER_NAME}" to "${CLUSTER_NAME}-20" all exist; start with --reset`);
}

export async function runUp(config: Config, options: UpOptions, env: Record<string, string | undefined> = {}): Promise<void> {
  if (options.reset && config.databaseUrl) {
    throw new UsageError("--reset clears only the embedded database; unset DATABASE_URL or reset that database yourself", UP_USAGE);
  }
  const say = (line: string) => process.stderr.write(`berth up: ${line}\n`);
  const logLevel = upLogLevel(options, config, env);
  const dataDir = config.dataDir;
  mkdirSync(dataDir, { recursive: true });
  if (options.reset) resetUpData(dataDir);
  const saved = readUpState(dataDir);
  // The API needs an admin token the launcher can use: the configured one, else one made once and kept.
  const adminToken = config.adminToken ?? saved.adminToken ?? `bt_${randomBytes(24).toString("base64url")}`;
  writeUpState(dataDir, { ...saved, ...(config.adminToken ? {} : { adminToken }) });

  let server: RunningServer | undefined;
  let cluster: SimCluster | undefined;
  let agent: Agent | undefined;
  let stopping = false;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    say("stopping");
    // Pods first and at once (no preStop, no grace); the rest in parallel; never past the deadline.
    setTimeout(() => process.exit(code), STOP_DEADLINE_MS).unref();
    void Promise.allSettled([cluster?.stop({ now: true }), agent?.stop(), server?.close()]).then(() => process.exit(code));
  };
  process.once("SIGINT", () => stop(0));
  process.once("SIGTERM", () => stop(0));

  const kubeconfigPath = resolve(upKubeconfigPath(dataDir));
  say(`starting the API (${config.databaseUrl ? "DATABASE_URL" : `embedded database in ${resolve(dataDir, "db")}`}) and a simulated cluster`);
  const started = await Promise.allSettled([
    startServer({ ...config, ...upWebhookPolicy(config, env), adminToken, logLevel }),
    startSimCluster({
      nodes: options.nodes,
      programs: berthPrograms({ routerImage: ROUTER_IMAGE }),
      timeScale: options.timeScale,
      kubeconfigPath,
      // The same kubeconfig server URL and pod/Service addresses as the last run, where still free.
      port: saved.simPort ?? 0,
      portFallback: true,
      addressMemory: { remembered: saved.simAddresses ?? {}, onChange: (simAddresses) => updateUpState(dataDir, { simAddresses }) },
    }),
  ]);
  const [api, sim] = started;
  if (api.status === "rejected" || sim.status === "rejected") {
    // One failed (a port in use): stop the other so the process can report it and exit.
    await Promise.allSettled([api.status === "fulfilled" && api.value.close(), sim.status === "fulfilled" && sim.value.stop({ now: true })]);
    throw (api.status === "rejected" ? api : (sim as PromiseRejectedResult)).reason;
  }
  server = api.value;
  cluster = sim.value;
  if (stopping) return;
  updateUpState(dataDir, { simPort: cluster.port });
  if (cluster.portTaken !== undefined) {
    say(`warning: the simulated cluster's port ${cluster.portTaken} (from the last run) is in use; it listens on ${cluster.port} now, and kubeconfigs copied before need the new server URL`);
  }
  say(`API listening on ${server.url}; simulated cluster API server on ${cluster.url}`);
  const { clusterId, agentToken, name: clusterName } = await ensureCluster(server.url, adminToken, saved);
  updateUpState(dataDir, { clusterId, agentToken });

  const kc = new KubeConfig();
  kc.loadFromOptions(cluster.kubeConfigOptions);
  const agentApi: AgentApi = createApiClient({ baseUrl: server.url, token: agentToken });
  agent = createAgent({ kube: createKube(kc), api: agentApi, clock: systemClock, config: { routerImage: ROUTER_IMAGE, ecCache: { storageClassName: SIM_STORAGE_CLASSES[0], size: DEFAULT_EC_CACHE_SIZE } }, logger: agentLogger(logLevel) });
  agent.start();
  say(`agent started for cluster ${clusterName} (${clusterId})`);

  const projects = await adminCall(server.url, adminToken, "GET", "/v1/projects?limit=100");
  const defaultProject = (projects.body?.items as Array<{ id: string; name: string }> | undefined)?.find((p) => p.name === "default");
  const gpus = options.nodes.reduce((sum, node) => sum + node.gpus, 0);
  const banner = [
    "",
    "berth is up (engines and routers are simulated: no GPU is used)",
    "",
    `  API          ${server.url}   (docs: ${server.url}/docs)`,
    `  admin token  ${adminToken}`,
    `  project      default${defaultProject ? ` (${defaultProject.id})` : ""}, no quota`,
    `  cluster      ${clusterName} (${clusterId}): ${options.nodes.length} nodes, ${gpus} × ${options.nodes[0]!.gpuType}`,
    `  kubeconfig   ${kubeconfigPath}`,
    "",
    `  export BERTH_URL=${server.url} BERTH_TOKEN=${adminToken}${defaultProject ? ` BERTH_PROJECT=${defaultProject.id}` : ""}`,
    `  export KUBECONFIG=${kubeconfigPath}`,
    "  kubectl get pods -A",
    "",
    `  (this is also in ${resolve(upBannerPath(dataDir))}; Ctrl-C stops everything)`,
    "",
  ].join("\n");
  writeUpBanner(dataDir, banner.trimStart() + "\n");
  process.stdout.write(banner + "\n");
}
