// A cluster that falls silent: the API's sweep turns its deployments' Ready condition Unknown
// (ClusterDisconnected); once the agent is heard again it re-sends what it observes, even
// though nothing changed on its side. And an agent away for longer than the tombstones are
// kept: its resume point is answered 410, it lists everything again and removes what is gone. The API runs in-process on a test clock (so 31 s of
// silence is a clock step), the agent against the simulated cluster with process-less pods.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { berthPrograms, type SimCluster, startSimCluster } from "../../k8s/sim/index.ts";
import { type Agent, createAgent } from "../../src/agent/agent.ts";
import type { AgentApi } from "../../src/agent/api-client.ts";
import type { Operation } from "../../src/domain/operations.ts";
import { ApiError } from "../../src/agent/api-client.ts";
import { createKube } from "../../src/agent/kube.ts";
import { systemClock } from "../../src/domain/clock.ts";
import type { Deployment } from "../../src/domain/deployment.ts";
import { deleteDeployment } from "../../db/queries/deployments.ts";
import { sweepClusters } from "../../src/services/agent/sweep-clusters.ts";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import { purgeRetention } from "../../src/services/retention/purge-retention.ts";
import { createTestApi, type TestApi } from "../support/api-harness.ts";
import { quiet } from "./e2e-support.ts";

const IMAGE = "vllm/vllm-openai:v0.11.0";

async function eventually<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The agent protocol over the in-process app (same routes and auth as over HTTP). */
function inProcessAgentApi(api: TestApi, token: string): AgentApi {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await api.call(method, path, { token, body });
    if (res.status >= 300 && !(method === "DELETE" && res.status === 404)) throw new ApiError(res.status, res.body, `${method} ${path}: ${res.status}`);
    return res.body;
  };
  return {
    heartbeat: async (body) => void (await call("POST", "/v1/agent/heartbeat", body)),
    desired: (since, waitSeconds) => call("GET", `/v1/agent/desired?since=${since}&waitSeconds=${waitSeconds}`),
    putStatus: async (id, status) => (await call("PUT", `/v1/deployments/${id}/status`, status)) as Deployment,
    confirmDeletion: async (id) => void (await call("DELETE", `/v1/agent/deployments/${id}`)),
    createOperation: async (body, idempotencyKey) => {
      const res = await api.call("POST", "/v1/agent/operations", { token, body, headers: { "Idempotency-Key": idempotencyKey } });
      if (res.status >= 300) throw new ApiError(res.status, res.body, `POST /v1/agent/operations: ${res.status}`);
      return res.body as Operation;
    },
    listOperations: async ({ deploymentId, kind, phase = [] }) => {
      const query = new URLSearchParams({ limit: "200", ...(deploymentId && { deploymentId }), ...(kind && { kind }) });
      for (const p of phase) query.append("phase", p);
      return ((await call("GET", `/v1/agent/operations?${query}`)) as { items: Operation[] }).items;
    },
    patchOperation: async (id, patch) => (await call("PATCH", `/v1/agent/operations/${id}`, patch)) as Operation,
    putMetrics: async (id, metrics) => void (await call("PUT", `/v1/agent/deployments/${id}/metrics`, metrics)),
    patchReplicas: async (id, roles, resourceVersion) => {
      const res = await api.call("PATCH", `/v1/deployments/${id}`, { token, body: { spec: { roles } }, headers: { "If-Match": `"${resourceVersion}"` } });
      if (res.status >= 300) throw new ApiError(res.status, res.body, `PATCH /v1/deployments/${id}: ${res.status}`);
      return res.body as Deployment;
    },
    postEvent: async (event) => void (await call("POST", "/v1/agent/events", event)),
  };
}

describe("an agent heard again after its cluster was marked disconnected", () => {
  let api: TestApi;
  let cluster: SimCluster;
  let agent: Agent;
  let kube: ReturnType<typeof createKube>;
  /** While true the agent's desired-state calls fail, as if the API were unreachable. */
  let desiredUnreachable = false;
  let refusedDesiredCalls = 0;

  beforeAll(async () => {
    [api, cluster] = await Promise.all([
      createTestApi("pglite"),
      startSimCluster({
        nodes: [{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpus: 8 }],
        programs: { ...berthPrograms({ routerImage: "ghcr.io/berth/berth:0.1.0" }), noProcessImages: [IMAGE] },
        timeScale: 0.1,
      }),
    ]);
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions(cluster.kubeConfigOptions);
    const { token } = await api.createAgent("edge");
    kube = createKube(kc);
    const agentApi = inProcessAgentApi(api, token);
    agent = createAgent({
      kube,
      api: {
        ...agentApi,
        desired: async (since, waitSeconds, signal) => {
          if (!desiredUnreachable) return agentApi.desired(since, waitSeconds, signal);
          refusedDesiredCalls++;
          throw new Error("connect ECONNREFUSED");
        },
      },
      clock: systemClock,
      // Its pods run no processes, so nothing could answer at the endpoint: the check before Ready is answered here.
      config: { settleMs: 200, waitSeconds: 1, heartbeatMs: 60_000, resyncMs: 500, backoffBaseMs: 100, backoffCapMs: 1_000, askEndpoint: async () => ({ answered: true, status: 200 }) },
      logger: quiet,
    });
    agent.start();
  }, 60_000);

  afterAll(async () => {
    await agent?.stop();
    await cluster?.stop({ now: true });
    await api?.close();
  }, 30_000);

  it("re-sends an unchanged status once the API has marked it Unknown", async () => {
    const created = await api.call("POST", "/v1/deployments", {
      body: {
        name: "quiet",
        projectId: api.defaultProjectId,
        spec: { model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image: IMAGE }, roles: [{ name: "main", resources: { gpus: 1 } }] },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const readyCondition = async () => {
      const res = await api.call("GET", `/v1/deployments/${id}`);
      return (res.body.status?.conditions ?? []).find((c: { type: string }) => c.type === "Ready");
    };
    await eventually("Ready", async () => (await readyCondition())?.status === "True");

    // 31 s of silence on the API's clock (the agent's heartbeat interval is a minute here).
    api.clock.advance(31_000);
    expect(await sweepClusters({ ctx: { db: api.database.db, clock: api.clock, config: DEFAULT_APP_CONFIG } })).toBe(1);
    expect(await readyCondition()).toMatchObject({ status: "Unknown", reason: "ClusterDisconnected" });

    // The agent's long-poll brings the marked deployment back; its pods are as they were.
    const back = await eventually("Ready True again", async () => {
      const condition = await readyCondition();
      return condition?.status === "True" ? condition : undefined;
    });
    expect(back.reason).toBe("Ready");
    const res = await api.call("GET", `/v1/deployments/${id}`);
    expect(res.body.status.message).toBeUndefined();
    expect(res.body.status.phase).toBe("Ready");
  }, 90_000);

  it("re-lists on a 410 for its resume point and removes a deployment whose deletion it missed", async () => {
    const create = async (name: string) => {
      const res = await api.call("POST", "/v1/deployments", {
        body: {
          name,
          projectId: api.defaultProjectId,
          spec: { model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image: IMAGE }, roles: [{ name: "main", resources: { gpus: 1 } }] },
        },
      });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const pods = async (id: string) =>
      (await kube.core.listNamespacedPod({ namespace: "berth-default", labelSelector: `berth.dev/deployment-id=${id}` })).items;
    const keep = await create("keep");
    const drop = await create("drop");
    await eventually("both running", async () => (await pods(keep)).length > 0 && (await pods(drop)).length > 0);

    // The API becomes unreachable for the agent; meanwhile the deletion of "drop" completes
    // without it (as when another replica confirmed it), and a week later its tombstone is purged.
    desiredUnreachable = true;
    const refusedBefore = refusedDesiredCalls;
    await eventually("the agent to miss the API", async () => refusedDesiredCalls > refusedBefore);
    await api.database.db.transaction((tx) => deleteDeployment(tx, drop, api.clock.now()));
    api.clock.advance(8 * 24 * 60 * 60 * 1000);
    expect((await purgeRetention({ ctx: { db: api.database.db, clock: api.clock, config: DEFAULT_APP_CONFIG } })).tombstones).toBe(1);
    // Losing contact alone never removes anything (docs/design.md §1.3).
    expect((await pods(drop)).length).toBeGreaterThan(0);

    desiredUnreachable = false;
    await eventually("drop's pods removed", async () => (await pods(drop)).length === 0);
    expect((await pods(keep)).length).toBeGreaterThan(0);
    expect((await api.call("GET", `/v1/deployments/${keep}`)).status).toBe(200);
  }, 90_000);
});
