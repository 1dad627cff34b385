// berth's virtual GPU node under a real control plane: `berth node` registers gpu-a with its
// node identity (Node authorizer, NodeRestriction), the real scheduler binds a Deployment's pod
// to it, the node runs the engine as a process on the pod's own address, the real endpoint
// controllers publish it and the real kube-proxy routes the Service's ClusterIP to it; a delete
// ends the process and the node removes the pod. `kubectl logs` reaches the node's port 10250
// through the API server, and the node refuses clients without a certificate of the cluster's CA.
import { request as httpsRequest } from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../agent/e2e-support.ts";
import { BERTH_BIN } from "../support/berth-process.ts";
import type { NamespacedProcess } from "../support/real-cluster/processes.ts";
import { CONTROL_PLANE_SETUP_MS, kubectlOn, type RealCluster, startRealCluster } from "./support.ts";

let cluster: RealCluster;
let kubectl: ReturnType<typeof kubectlOn>;
let node: NamespacedProcess;

const json = async (args: string[]) => {
  const run = await kubectl([...args, "-o", "json"]);
  if (run.code !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout);
};

beforeAll(async () => {
  cluster = await startRealCluster();
  kubectl = kubectlOn(cluster);
  const credentials = await cluster.kubeconfigsFor("node-gpu-a", { user: "system:node:gpu-a", groups: ["system:nodes"] });
  node = cluster.startInside(
    "node-gpu-a",
    process.execPath,
    [BERTH_BIN, "node", "--name", "gpu-a", "--address", "10.244.1.1", "--pod-addresses", "10.244.1.2-10.244.1.254", "--gpus", "8", "--kubeconfig", credentials.inside, "--time-scale", "0.1"],
    { BERTH_FROM_SOURCE: process.env.BERTH_FROM_SOURCE ?? "1" },
  );
}, CONTROL_PLANE_SETUP_MS);
afterAll(async () => {
  await cluster?.stop();
});

describe("berth node under a real control plane", () => {
  it("registers gpu-a Ready with 8 GPUs, GPU Feature Discovery's labels and a Lease", async () => {
    const ready = await eventually(
      "node gpu-a Ready",
      async () => {
        const got = await kubectl(["get", "node", "gpu-a", "-o", "json"]);
        if (got.code !== 0) return undefined;
        const object = JSON.parse(got.stdout);
        return object.status.conditions.find((c: { type: string; status: string }) => c.type === "Ready")?.status === "True" ? object : undefined;
      },
      60_000,
    );
    expect(ready.status.allocatable["nvidia.com/gpu"]).toBe("8");
    expect(ready.metadata.labels).toMatchObject({
      "berth.dev/gpu-type": "nvidia-h100-80gb",
      "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
      "nvidia.com/gpu.count": "8",
      "nvidia.com/gpu.present": "true",
    });
    await cluster.startProxy("gpu-a");
    const lease = await json(["get", "lease", "gpu-a", "-n", "kube-node-lease"]);
    expect(lease.spec.holderIdentity).toBe("gpu-a");
    expect(lease.metadata.ownerReferences[0]).toMatchObject({ kind: "Node", name: "gpu-a" });
  }, 90_000);

  it("runs the pod the real scheduler binds, on its own address, behind a ClusterIP the real kube-proxy routes", async () => {
    const manifest = {
      apiVersion: "v1",
      kind: "List",
      items: [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "engine", namespace: "default" },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: "engine" } },
            template: {
              metadata: { labels: { app: "engine" } },
              spec: {
                terminationGracePeriodSeconds: 5,
                containers: [
                  {
                    name: "vllm",
                    image: "vllm/vllm-openai:v0.11.0",
                    command: ["vllm", "serve", "Qwen/Qwen3-8B", "--port", "8000"],
                    ports: [{ containerPort: 8000 }],
                    resources: { limits: { "nvidia.com/gpu": "2" } },
                    readinessProbe: { httpGet: { path: "/health", port: 8000 }, periodSeconds: 1 },
                  },
                ],
              },
            },
          },
        },
        { apiVersion: "v1", kind: "Service", metadata: { name: "engine", namespace: "default" }, spec: { selector: { app: "engine" }, ports: [{ port: 80, targetPort: 8000 }] } },
      ],
    };
    const applied = await kubectl(["apply", "-f", "-"], { input: JSON.stringify(manifest) });
    expect(applied.code, applied.stderr).toBe(0);
    const pod = await eventually(
      () => `the engine pod Ready; node log:\n${node.logFile}`,
      async () => {
        const pods = await json(["get", "pods", "-n", "default", "-l", "app=engine"]);
        const first = pods.items[0];
        return first?.status?.conditions?.find((c: { type: string; status: string }) => c.type === "Ready")?.status === "True" ? first : undefined;
      },
      90_000,
    );
    expect(pod.spec.nodeName).toBe("gpu-a");
    expect(pod.status.podIP).toMatch(/^10\.244\.1\.\d+$/);
    expect(pod.status.hostIP).toBe("10.244.1.1");

    const slices = await eventually("an EndpointSlice with the pod's address", async () => {
      const list = await json(["get", "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=engine"]);
      return list.items.find((s: { endpoints?: Array<{ addresses: string[] }> }) => s.endpoints?.some((e) => e.addresses.includes(pod.status.podIP)));
    });
    expect(slices.endpoints[0].conditions.ready).toBe(true);

    const service = await json(["get", "service", "engine", "-n", "default"]);
    expect(service.spec.clusterIP).toMatch(/^10\.96\./);
    const here = await cluster.reach(service.spec.clusterIP, 80);
    const models = await eventually("the ClusterIP answering through kube-proxy", async () => {
      const res = await fetch(`http://${here.host}:${here.port}/v1/models`, { signal: AbortSignal.timeout(5_000) });
      return res.status === 200 ? ((await res.json()) as { data: Array<{ id: string }> }) : undefined;
    });
    expect(models.data[0]!.id).toBe("Qwen/Qwen3-8B");
  }, 150_000);

  it("kubectl logs reads the engine's output through the API server from the node's port 10250", async () => {
    const logs = await eventually("the engine's first log lines", async () => {
      const run = await kubectl(["logs", "-n", "default", "deploy/engine"]);
      if (run.code !== 0) throw new Error(run.stderr);
      return run.stdout.includes("berth-sim") && run;
    });
    expect(logs.stdout).toMatch(/listening on http:\/\/10\.244\.1\.\d+:8000/);
    const last = await kubectl(["logs", "-n", "default", "deploy/engine", "-c", "vllm", "--tail=1"]);
    expect(last.code, last.stderr).toBe(0);
    expect(last.stdout.trimEnd().split("\n")).toHaveLength(1);
    // The node answers only clients the cluster's CA vouches for: the API server's kubelet client.
    const kubelet = await cluster.reach("10.244.1.1", 10250);
    const refused = await new Promise<string>((resolve) => {
      const req = httpsRequest({ host: kubelet.host, port: kubelet.port, path: "/containerLogs/default/x/y", rejectUnauthorized: false }, (res) => resolve(`answered ${res.statusCode}`));
      req.on("error", (error) => resolve(`refused: ${(error as NodeJS.ErrnoException).code ?? error.message}`));
      req.end();
    });
    expect(refused).toMatch(/^refused/);
  });

  it("a deleted pod's process stops and the node removes the pod object", async () => {
    const before = await json(["get", "pods", "-n", "default", "-l", "app=engine"]);
    const name = before.items[0].metadata.name as string;
    const deleted = await kubectl(["delete", "pod", name, "-n", "default", "--wait=true", "--timeout=60s"]);
    expect(deleted.code, deleted.stderr).toBe(0);
    // The Deployment's ReplicaSet makes a replacement, which the node runs in turn.
    const replacement = await eventually("a Running replacement", async () => {
      const pods = await json(["get", "pods", "-n", "default", "-l", "app=engine"]);
      return pods.items.find((p: { metadata: { name: string }; status: { phase: string } }) => p.metadata.name !== name && p.status.phase === "Running");
    }, 60_000);
    expect(replacement.spec.nodeName).toBe("gpu-a");
    const events = await json(["get", "events", "-n", "default", "--field-selector", `involvedObject.name=${name}`]);
    const reasons = events.items.map((e: { reason: string }) => e.reason);
    expect(reasons).toContain("Scheduled");
    expect(reasons).toContain("Started");
    expect(reasons).toContain("Killing");
  }, 120_000);
});
