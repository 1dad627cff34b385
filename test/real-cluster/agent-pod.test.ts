// The agent as a platform team runs it: each install bundle (cluster and namespaced mode) applied
// with kubectl to a real control plane, its two replicas run by `berth node` as pods with nothing
// but their ServiceAccount's projected token (no kubeconfig, HOME in the pod's sandbox, the token
// at /var/run/secrets/kubernetes.io/serviceaccount in a mount namespace of their own). They elect
// a leader, connect to the API, report gpu-a, and bring a deployment to Ready under the policy;
// its first request is served.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { registerAgent } from "../../src/agent/api-client.ts";
import { adminCaller, chat, eventually, type AdminCall } from "../agent/e2e-support.ts";
import { type BerthServer, startBerthServer } from "../support/berth-process.ts";
import { type RealGpuCluster, startRealGpuCluster } from "../support/real-cluster/gpu-cluster.ts";
import { CONTROL_PLANE_SETUP_MS, kubectlOn } from "./support.ts";

const ROOT = join(import.meta.dirname, "../..");
/** Where the API answers inside the cluster's network (the relay carries it to this process's server). */
const API_INSIDE = { host: "10.244.0.2", port: 8787 };

const MODES = [
  { mode: "cluster", overlay: "deploy/agent/overlays/cluster" },
  // The namespaced bundle creates berth-demo and berth-research and confines the agent to them.
  { mode: "namespaced", overlay: "deploy/agent/overlays/namespaced" },
] as const;

describe.each(MODES)("the agent as pods of the $mode-mode bundle on a real control plane", ({ overlay }) => {
  let world: RealGpuCluster;
  let server: BerthServer;
  let call: AdminCall;
  let kubectl: ReturnType<typeof kubectlOn>;
  let dir: string;
  let clusterId: string;

  beforeAll(async () => {
    [world, server] = await Promise.all([
      startRealGpuCluster({ nodes: [{ name: "gpu-a", gpus: 8 }], simEngineFlags: ["--latency-profile", "turbo"], timeScale: 0.1 }),
      startBerthServer(),
    ]);
    kubectl = kubectlOn(world.cluster);
    call = adminCaller(server);
    await world.cluster.relay.expose({ host: "127.0.0.1", port: Number(new URL(server.url).port) }, API_INSIDE);
    dir = mkdtempSync(join(tmpdir(), "berth-agent-pod-"));
  }, CONTROL_PLANE_SETUP_MS);
  afterAll(async () => {
    await Promise.allSettled([world?.stop(), server?.stop()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("kubectl apply -k of the bundle, its Secret given the API's URL and the agent's credential, exits 0", async () => {
    const created = await call("POST", "/v1/clusters", { name: "real" });
    expect(created.status).toBe(201);
    clusterId = created.body.cluster.id;
    const { token } = await registerAgent(server.url, created.body.joinToken);
    // What a platform team writes: an overlay of the published bundle with their Secret values.
    writeFileSync(
      join(dir, "kustomization.yaml"),
      stringify({
        apiVersion: "kustomize.config.k8s.io/v1beta1",
        kind: "Kustomization",
        resources: [relative(dir, join(ROOT, overlay))],
        secretGenerator: [
          { name: "berth-agent", namespace: "berth-system", behavior: "replace", literals: [`BERTH_API_URL=http://${API_INSIDE.host}:${API_INSIDE.port}`, `BERTH_AGENT_TOKEN=${token}`] },
        ],
      }),
    );
    const applied = await kubectl(["apply", "-k", dir]);
    expect(applied.code, applied.stderr).toBe(0);
  }, 60_000);

  it("runs both replicas on gpu-a; one takes the Lease and the cluster reports Connected with gpu-a's GPUs", async () => {
    const pods = await eventually(
      "two Running agent pods",
      async () => {
        const run = await kubectl(["get", "pods", "-n", "berth-system", "-l", "app.kubernetes.io/name=berth-agent", "-o", "json"]);
        const items = JSON.parse(run.stdout).items as Array<{ metadata: { name: string }; spec: { nodeName: string }; status: { phase: string } }>;
        return items.length === 2 && items.every((p) => p.status.phase === "Running") ? items : undefined;
      },
      90_000,
    );
    expect(pods.map((p) => p.spec.nodeName)).toEqual(["gpu-a", "gpu-a"]);
    const connected = await eventually(
      "the cluster Connected with its inventory",
      async () => {
        const res = await call("GET", `/v1/clusters/${clusterId}`);
        return res.body.status?.phase === "Connected" && res.body.inventory ? res.body : undefined;
      },
      90_000,
    );
    expect(connected.inventory.nodes).toEqual([{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 8 }]);
    const lease = JSON.parse((await kubectl(["get", "lease", "berth-agent", "-n", "berth-system", "-o", "json"])).stdout);
    expect(pods.map((p) => p.metadata.name)).toContain(lease.spec.holderIdentity);
  }, 200_000);

  it("brings a deployment to Ready and serving, its objects written with the ServiceAccount's token under the policy", async () => {
    const project = await call("POST", "/v1/projects", { name: "demo" });
    expect(project.status).toBe(201);
    const created = await call("POST", "/v1/deployments", {
      name: "chat",
      projectId: project.body.id,
      spec: {
        clusterId,
        model: { name: "Qwen/Qwen3-8B" },
        engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
        roles: [{ name: "main", replicas: 1, resources: { gpus: 1 } }],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    let last: unknown;
    const ready = await eventually(
      () => `chat Ready (${JSON.stringify(last)})`,
      async () => {
        const { body } = await call("GET", `/v1/deployments/${created.body.id}`);
        last = body.status;
        return body.status?.phase === "Ready" ? body : undefined;
      },
      120_000,
    );
    // Ready means the endpoint answers (the agent asked it first): the first request is served.
    const answer = await chat(ready.status.endpoint);
    expect(answer.status, answer.text).toBe(200);
    // Written by the only credential the pods hold, the ServiceAccount's token: admitted by the
    // confinement policy because it carries the agent's label in a berth-* namespace.
    const pod = JSON.parse((await kubectl(["get", "pod", "chat-main-r0-m0", "-n", "berth-demo", "-o", "json", "--show-managed-fields"])).stdout);
    expect(pod.metadata.labels["app.kubernetes.io/managed-by"]).toBe("berth-agent");
    // The apiserver records who created it: the agent names itself, the node wrote the status.
    expect(pod.metadata.managedFields.find((f: { operation: string; subresource?: string }) => f.operation === "Update" && !f.subresource)?.manager).toBe("berth-agent");
    expect(pod.spec.nodeName).toBe("gpu-a");
  }, 200_000);
});
