// The CustomResourceDefinitions berth's next steps build on, installed on a real kube-apiserver
// from their pinned modules (scripts/fetch-crds.sh): LeaderWorkerSet (multi-host groups as one
// object), Gateway API and InferencePool (exposure). kubectl applies one object of each kind,
// which the apiserver validates against the CRD's schema, and refuses one that breaks it.
import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONTROL_PLANE_SETUP_MS, kubectlOn, type RealCluster, startRealCluster } from "./support.ts";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "../..");

let cluster: RealCluster;
let kubectl: ReturnType<typeof kubectlOn>;
let crds: string;

beforeAll(async () => {
  [cluster, crds] = await Promise.all([
    startRealCluster(),
    run("bash", [join(ROOT, "scripts/fetch-crds.sh")]).then(({ stdout }) => stdout.trim().split("\n").at(-1)!),
  ]);
  kubectl = kubectlOn(cluster);
}, CONTROL_PLANE_SETUP_MS);
afterAll(async () => {
  await cluster?.stop();
});

const LABELS = { "app.kubernetes.io/managed-by": "berth-agent" };

const OBJECTS = {
  lws: {
    apiVersion: "leaderworkerset.x-k8s.io/v1",
    kind: "LeaderWorkerSet",
    metadata: { name: "chat-main", namespace: "default", labels: LABELS },
    spec: {
      replicas: 1,
      leaderWorkerTemplate: {
        size: 2,
        workerTemplate: { spec: { containers: [{ name: "engine", image: "vllm/vllm-openai:v0.11.0", resources: { limits: { "nvidia.com/gpu": "8" } } }] } },
      },
    },
  },
  gatewayClass: { apiVersion: "gateway.networking.k8s.io/v1", kind: "GatewayClass", metadata: { name: "berth" }, spec: { controllerName: "berth.dev/gateway" } },
  gateway: {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { name: "inference", namespace: "default" },
    spec: { gatewayClassName: "berth", listeners: [{ name: "http", protocol: "HTTP", port: 80 }] },
  },
  httpRoute: {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { name: "chat", namespace: "default" },
    spec: {
      parentRefs: [{ name: "inference" }],
      rules: [{ matches: [{ path: { type: "PathPrefix", value: "/v1" } }], backendRefs: [{ group: "inference.networking.k8s.io", kind: "InferencePool", name: "chat" }] }],
    },
  },
  inferencePool: {
    apiVersion: "inference.networking.k8s.io/v1",
    kind: "InferencePool",
    metadata: { name: "chat", namespace: "default" },
    spec: { selector: { matchLabels: { "berth.dev/deployment": "chat" } }, targetPorts: [{ number: 8000 }], endpointPickerRef: { name: "chat-epp", port: { number: 9002 } } },
  },
};

describe("CRDs from their pinned modules on a real kube-apiserver", () => {
  it("install and become Established", async () => {
    for (const dir of ["lws", "gateway-api", "inference-extension"]) {
      const files = readdirSync(join(crds, dir)).filter((f) => f.endsWith(".yaml"));
      expect(files.length).toBeGreaterThan(0);
      const applied = await kubectl(["apply", "--server-side", ...files.flatMap((f) => ["-f", join(crds, dir, f)])]);
      expect(applied.code, applied.stderr).toBe(0);
    }
    const names = ["leaderworkersets.leaderworkerset.x-k8s.io", "gateways.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io", "inferencepools.inference.networking.k8s.io"];
    const waited = await kubectl(["wait", "--for=condition=Established", "--timeout=60s", ...names.map((n) => `crd/${n}`)]);
    expect(waited.code, waited.stderr).toBe(0);
  }, 120_000);

  it.each(Object.entries(OBJECTS))("kubectl applies a %s", async (_, object) => {
    // A CRD is served a moment after Established (discovery): retry "no matches for kind" briefly.
    const deadline = Date.now() + 20_000;
    let applied = await kubectl(["apply", "-f", "-"], { input: JSON.stringify(object) });
    while (applied.code !== 0 && /no matches for kind|ensure CRDs are installed/.test(applied.stderr) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      applied = await kubectl(["apply", "-f", "-"], { input: JSON.stringify(object) });
    }
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/created/);
    const got = await kubectl(["get", `${object.kind.toLowerCase()}.${object.apiVersion.split("/")[0]}`, object.metadata.name, ...("namespace" in object.metadata ? ["-n", object.metadata.namespace] : []), "-o", "json"]);
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout).metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
  }, 60_000);

  it("the apiserver holds them to their schemas: an InferencePool without targetPorts is refused", async () => {
    const bad = { ...OBJECTS.inferencePool, metadata: { name: "broken", namespace: "default" }, spec: { ...OBJECTS.inferencePool.spec, targetPorts: undefined } };
    const applied = await kubectl(["apply", "-f", "-"], { input: JSON.stringify(bad) });
    expect(applied.code).not.toBe(0);
    expect(applied.stderr).toMatch(/targetPorts/);
  });
});
