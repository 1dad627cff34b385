// `berth up`: the whole system on one machine — the API (PGlite in $BERTH_DATA_DIR unless
// DATABASE_URL says otherwise), a simulated Kubernetes cluster (k8s/sim) whose pods run the
// engine simulator and the router, and an agent registered to it. The composition root: it
// parses configuration once, reuses its cluster and agent credential across restarts, and on
// SIGTERM/SIGINT kills the simulated pods at once and exits within 3 s.
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { berthPrograms, type SimCluster, type SimNode, startSimCluster } from "../../k8s/sim/index.ts";
import { createAgent, type Agent, type Logger } from "../agent/agent.ts";
import { type AgentApi, createApiClient, registerAgent } from "../agent/api-client.ts";
import { createKube } from "../agent/kube.ts";
import type { Config } from "../api/config.ts";
import { type RunningServer, startServer } from "../api/serve-node.ts";
import { systemClock } from "../domain/clock.ts";
import { GPU_TYPES } from "../domain/gpu-profiles.ts";
import { readUpState, resetUpData, upKubeconfigPath, type UpState, writeUpState } from "./up-state.ts";

export const UP_USAGE = `usage: berth up [--reset] [--nodes N] [--gpus-per-node N] [--gpu-type ID] [--time-scale X]

Runs the API, a simulated GPU cluster and an agent in one process tree (Ctrl-C stops all).
  --reset            start empty: forget the embedded database, the cluster and its credential
  --nodes N          simulated GPU nodes (default 2)
  --gpus-per-node N  GPUs per node (default 8)
  --gpu-type ID      the nodes' GPU type (default nvidia-h100-80gb)
  --time-scale X     multiplies probe periods and backoffs in the simulated cluster (default 0.2)
Configuration as for \`berth serve\`: PORT, HOST, BERTH_DATA_DIR, BERTH_ADMIN_TOKEN, LOG_LEVEL, …`;

const CLUSTER_NAME = "local";
const ROUTER_IMAGE = "ghcr.io/berth/berth:0.1.0";
/** The issue's bound is 3 s from the signal to exit; leave margin for the process itself. */
const STOP_DEADLINE_MS = 2_500;

export interface UpOptions {
  reset: boolean;
  nodes: SimNode[];
  timeScale: number;
}

export class UsageError extends Error {}

export function parseUpArgs(args: string[]): UpOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        reset: { type: "boolean", default: false },
        nodes: { type: "string", default: "2" },
        "gpus-per-node": { type: "string", default: "8" },
        "gpu-type": { type: "string", default: "nvidia-h100-80gb" },
        "time-scale": { type: "string", default: "0.2" },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const integer = (name: string, text: string, max: number) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1 || value > max) throw new UsageError(`--${name} must be an integer from 1 to ${max} (got ${text})`);
    return value;
  };
  const count = integer("nodes", values.nodes, 64);
  const gpus = integer("gpus-per-node", values["gpus-per-node"], 16);
  const gpuType = values["gpu-type"];
  if (!(GPU_TYPES as readonly string[]).includes(gpuType)) throw new UsageError(`--gpu-type must be one of ${GPU_TYPES.join(", ")} (got ${gpuType})`);
  const timeScale = Number(values["time-scale"]);
  if (!Number.isFinite(timeScale) || timeScale <= 0 || timeScale > 10) throw new UsageError(`--time-scale must be a number in (0, 10] (got ${values["time-scale"]})`);
  const nodes = Array.from({ length: count }, (_, i) => ({ name: `sim-gpu-${i}`, gpuType, gpus }));
  return { reset: values.reset, nodes, timeScale };
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

export async function runUp(config: Config, options: UpOptions): Promise<void> {
  if (options.reset && config.databaseUrl) {
    throw new UsageError("--reset clears only the embedded database; unset DATABASE_URL or reset that database yourself");
  }
  mkdirSync(config.dataDir, { recursive: true });
  if (options.reset) resetUpData(config.dataDir);
  const saved = readUpState(config.dataDir);
  // The API needs an admin token the launcher can use: the configured one, else one made once and kept.
  const adminToken = config.adminToken ?? saved.adminToken ?? `bt_${randomBytes(24).toString("base64url")}`;
  writeUpState(config.dataDir, { ...saved, ...(config.adminToken ? {} : { adminToken }) });

  let server: RunningServer | undefined;
  let cluster: SimCluster | undefined;
  let agent: Agent | undefined;
  let stopping = false;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    // Pods first and at once (no preStop, no grace); the rest in parallel; never past the deadline.
    setTimeout(() => process.exit(code), STOP_DEADLINE_MS).unref();
    void Promise.allSettled([cluster?.stop({ now: true }), agent?.stop(), server?.close()]).then(() => process.exit(code));
  };
  process.once("SIGINT", () => stop(0));
  process.once("SIGTERM", () => stop(0));

  const kubeconfigPath = upKubeconfigPath(config.dataDir);
  [server, cluster] = await Promise.all([
    startServer({ ...config, adminToken }),
    startSimCluster({
      nodes: options.nodes,
      programs: berthPrograms({ routerImage: ROUTER_IMAGE }),
      timeScale: options.timeScale,
      kubeconfigPath,
    }),
  ]);
  if (stopping) return;
  const { clusterId, agentToken, name: clusterName } = await ensureCluster(server.url, adminToken, saved);
  writeUpState(config.dataDir, { ...readUpState(config.dataDir), clusterId, agentToken });

  const kc = new KubeConfig();
  kc.loadFromOptions(cluster.kubeConfigOptions);
  const api: AgentApi = createApiClient({ baseUrl: server.url, token: agentToken });
  agent = createAgent({ kube: createKube(kc), api, clock: systemClock, config: { routerImage: ROUTER_IMAGE }, logger: agentLogger(config.logLevel) });
  agent.start();

  const projects = await adminCall(server.url, adminToken, "GET", "/v1/projects?limit=100");
  const defaultProject = (projects.body?.items as Array<{ id: string; name: string }> | undefined)?.find((p) => p.name === "default");
  const gpus = options.nodes.reduce((sum, node) => sum + node.gpus, 0);
  process.stderr.write(
    [
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
      `  kubectl --kubeconfig ${kubeconfigPath} get pods -A`,
      "",
      "",
    ].join("\n"),
  );
  process.stdout.write(JSON.stringify({ level: "info", service: "berth-up", msg: "berth up ready", url: server.url, clusterId, kubeconfig: kubeconfigPath }) + "\n");
}
