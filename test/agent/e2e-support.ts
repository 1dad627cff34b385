// The harness the agent's end-to-end tests share: a real `berth serve` child process, a simulated
// cluster on loopback with one registered cluster record, an admin fetch helper and in-process
// agents with short intervals. It owns setup, polling and teardown (checking only that its own setup
// calls succeed); every assertion about behaviour stays in the test files.
import * as k8s from "@kubernetes/client-node";
import { expect } from "vitest";
import { join } from "node:path";
import { berthPrograms, type SimCluster, type SimClusterOptions, startSimCluster, writeKubeconfig } from "../../k8s/sim/index.ts";
import { type Agent, type AgentConfig, createAgent, type Logger } from "../../src/agent/agent.ts";
import { type AgentApi, createApiClient, registerAgent } from "../../src/agent/api-client.ts";
import { createKube, type Kube } from "../../src/agent/kube.ts";
import { systemClock } from "../../src/domain/clock.ts";
import { type BerthServer, startBerthServer } from "../support/berth-process.ts";
import { type GpuNodeSpec, type RealGpuCluster, startRealGpuCluster } from "../support/real-cluster/gpu-cluster.ts";

/**
 * Where the world's cluster runs: "sim", the simulated cluster in this process; "real", a real
 * control plane (test/support/real-cluster) with `berth node` processes running the pods.
 */
export type Backend = "sim" | "real";

/**
 * Where the agent's end-to-end suites run in `npm test`: the real control plane. The parity suite
 * (agent-e2e.test.ts) runs on both clusters; decision 0073 says why the rest run on one.
 */
export const E2E_BACKENDS: readonly Backend[] = ["real"];

export const MODEL = "Qwen/Qwen3-8B";
export const ROUTER_IMAGE = "ghcr.io/berth/berth:0.1.0";
export const quiet: Logger = { info: () => {}, warn: () => {} };

/** Intervals short enough for a test to see every loop turn within seconds. */
export const FAST_AGENT_CONFIG = { settleMs: 300, waitSeconds: 2, heartbeatMs: 1_000, resyncMs: 1_000, backoffBaseMs: 100, backoffCapMs: 1_000 };
const AGENT_RETRY = { attempts: 2, baseMs: 50, capMs: 200 };

/** Polls `fn` until it returns something truthy; on timeout the error names `what` and the last thrown error. */
export async function eventually<T>(
  what: string | (() => string),
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
  pollMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === "string" ? what : what()}${last ? `: ${String(last)}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

export type AdminCall = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; body: any; etag: string | null }>;

/** JSON calls to the API as its admin; `server` may be a getter for a server that gets restarted. */
export function adminCaller(server: BerthServer | (() => BerthServer)): AdminCall {
  const current = typeof server === "function" ? server : () => server;
  return async (method, path, body, headers = {}) => {
    const { url, adminToken } = current();
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, etag: res.headers.get("etag") };
  };
}

export interface ChatOptions {
  content?: string;
  maxTokens?: number;
  timeoutMs?: number;
  /** More request fields, e.g. `{ ignore_eos: true }`. */
  extra?: object;
}

/** One non-streaming chat completion; the caller asserts on the status and text. */
export async function chat(endpoint: string, { content = "hello", maxTokens = 8, timeoutMs = 30_000, extra = {} }: ChatOptions = {}) {
  const res = await fetch(`${endpoint}/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content }], max_tokens: maxTokens, ...extra }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, text: await res.text() };
}

/** The content of a chat completion's first choice. */
export const answerOf = (text: string) => (JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;

/** Streaming chat clients looping until stopped; every answer must be 200 and end with [DONE]. */
export function startClients(endpoint: string, clients: number, maxTokens: number, model = MODEL) {
  let stop = false;
  const results = { ok: 0, failed: [] as string[], durations: [] as number[] };
  const one = async () => {
    const started = Date.now();
    try {
      const res = await fetch(`${endpoint}/v1/chat/completions`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "tell me a long story" }], max_tokens: maxTokens, ignore_eos: true, stream: true }),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await res.text();
      if (res.status !== 200) results.failed.push(`${res.status} ${text.slice(0, 200)}`);
      else if (!text.trimEnd().endsWith("data: [DONE]")) results.failed.push(`incomplete stream: …${text.slice(-200)}`);
      else {
        results.ok++;
        results.durations.push(Date.now() - started);
      }
    } catch (error) {
      results.failed.push(String(error));
    }
  };
  const loops = Array.from({ length: clients }, async () => {
    while (!stop) await one();
  });
  return {
    results,
    async stop() {
      stop = true;
      await Promise.all(loops);
      return results;
    },
  };
}

export interface AgentWorldOptions {
  /** Default "sim". */
  backend?: Backend;
  /** GPUs on the single node "gpu-a" (default 8), unless `nodes` says otherwise. */
  gpus?: number;
  /** The cluster's GPU nodes (default one, "gpu-a" with `gpus` H100s). */
  nodes?: GpuNodeSpec[];
  /** Engine flags of the simulated engines (default the turbo latency profile); null keeps the engine's default. */
  simEngineFlags?: string[] | null;
  /** More simulated-cluster options (watch history, request hooks). */
  sim?: Partial<SimClusterOptions>;
  /** Also create a project of this name; its id is `projectId`. */
  project?: string;
}

export interface StartAgentOptions {
  kube?: Kube;
  api?: AgentApi;
  config?: Partial<AgentConfig>;
  logger?: Logger;
  retry?: { attempts: number; baseMs: number; capMs: number };
}

export interface AgentWorld {
  backend: Backend;
  server: BerthServer;
  /** The simulated cluster (backend "sim" only). */
  cluster: SimCluster | undefined;
  /** The real control plane and its berth nodes (backend "real" only). */
  real: RealGpuCluster | undefined;
  /** A kubeconfig file for the cluster's admin, for processes of this machine (kubectl, `berth agent`). */
  kubeconfigPath: string;
  kubeConfig: k8s.KubeConfig;
  /** A client for the test's own reads and writes. */
  kube: Kube;
  /** The registered agent's bearer token. */
  token: string;
  projectId: string;
  call: AdminCall;
  /** POST /v1/deployments in the world's project; expects 201 and returns the id. */
  create(name: string, spec: object): Promise<string>;
  /**
   * Polls until the deployment is Ready at its current generation and `check` holds; the timeout
   * error names `what` (default "<id> Ready") and the last status seen.
   */
  readyDeployment(id: string, options?: { check?: (body: any) => boolean; timeoutMs?: number; what?: string }): Promise<any>;
  /** A new API client with the agent's token. */
  api(retry?: StartAgentOptions["retry"]): AgentApi;
  /** Starts an in-process agent (its own kube client unless given); `stop()` stops the last one started. */
  startAgent(options?: StartAgentOptions): Agent;
  stop(): Promise<void>;
}

interface WorldCluster {
  sim?: SimCluster;
  real?: RealGpuCluster;
  kubeConfig: k8s.KubeConfig;
  kubeconfigPath: string;
  stop(): Promise<void>;
}

/** The given GPU nodes, probes and backoffs 10× faster, on either backend. */
async function startWorldCluster(backend: Backend, nodes: GpuNodeSpec[], simEngineFlags: string[] | null, sim: Partial<SimClusterOptions> = {}): Promise<WorldCluster> {
  if (backend === "real") {
    const real = await startRealGpuCluster({ nodes, simEngineFlags: simEngineFlags ?? [], timeScale: 0.1 });
    return { real, kubeConfig: real.kubeConfig, kubeconfigPath: real.kubeconfigPath, stop: () => real.stop() };
  }
  const cluster = await startSimCluster({
    nodes: nodes.map(({ name, gpus, gpuType }) => ({ name, gpuType: gpuType ?? "nvidia-h100-80gb", gpus })),
    programs: berthPrograms({ routerImage: ROUTER_IMAGE, ...(simEngineFlags ? { simEngineFlags } : {}) }),
    timeScale: 0.1,
    ...sim,
  });
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromOptions(cluster.kubeConfigOptions);
  const kubeconfigPath = writeKubeconfig(join(cluster.workDir, "admin.kubeconfig"), cluster.url, { token: cluster.token });
  return { sim: cluster, kubeConfig, kubeconfigPath, stop: () => cluster.stop({ now: true }) };
}

/** Starts `berth serve` and a cluster (simulated unless `backend` is "real"), registers cluster "sim" and, if asked, a project. */
export async function startAgentWorld(options: AgentWorldOptions = {}): Promise<AgentWorld> {
  const { gpus = 8, simEngineFlags = ["--latency-profile", "turbo"], backend = "sim" } = options;
  const nodes = options.nodes ?? [{ name: "gpu-a", gpus }];
  const [server, world] = await Promise.all([startBerthServer(), startWorldCluster(backend, nodes, simEngineFlags, options.sim)]);
  const { kubeConfig } = world;
  const cluster = world.sim;
  const call = adminCaller(server);
  const created = await call("POST", "/v1/clusters", { name: "sim" });
  expect(created.status).toBe(201);
  const { token } = await registerAgent(server.url, created.body.joinToken);
  let projectId = "";
  if (options.project) {
    const project = await call("POST", "/v1/projects", { name: options.project });
    expect(project.status).toBe(201);
    projectId = project.body.id;
  }
  const api = (retry = AGENT_RETRY) => createApiClient({ baseUrl: server.url, token, retry });
  let last: Agent | undefined;
  return {
    backend,
    server,
    cluster,
    real: world.real,
    kubeconfigPath: world.kubeconfigPath,
    kubeConfig,
    kube: createKube(kubeConfig),
    token,
    projectId,
    call,
    async create(name, spec) {
      const created = await call("POST", "/v1/deployments", { name, projectId, spec });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.id as string;
    },
    readyDeployment(id, { check = () => true, timeoutMs = 60_000, what = `${id} Ready` } = {}) {
      let last: unknown;
      return eventually(
        () => `${what}; last status ${JSON.stringify(last)}`,
        async () => {
          const { body } = await call("GET", `/v1/deployments/${id}`);
          last = body?.status;
          return body?.status?.phase === "Ready" && body.status.observedGeneration === body.generation && check(body) ? body : undefined;
        },
        timeoutMs,
      );
    },
    api,
    startAgent({ kube = createKube(kubeConfig), retry, config = {}, logger = quiet, ...rest } = {}) {
      last = createAgent({ kube, api: rest.api ?? api(retry), clock: systemClock, config: { ...FAST_AGENT_CONFIG, ...config }, logger });
      last.start();
      return last;
    },
    async stop() {
      await last?.stop();
      await world.stop();
      await server.stop();
    },
  };
}
