// The install bundles against a simulated cluster: `kubectl kustomize` renders each bundle,
// `kubectl apply -k` applies each, and a real `berth agent` process in namespaced mode (the
// overlay's namespaces) brings a deployment in an allowed namespace to Ready while refusing one
// outside its list, without a single cluster-wide request beyond nodes; under the simulated
// cluster's RBAC and admission policy, two such agents with the overlay's ServiceAccount token
// elect a leader, and the standby takes over a SIGKILLed leader's work.
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { writeKubeconfig } from "../../k8s/sim/index.ts";
import type { ObservedRequest } from "../../k8s/sim/api-server.ts";
import { registerAgent } from "../../src/agent/api-client.ts";
import { type AgentWorld, eventually, startAgentWorld } from "../agent/e2e-support.ts";
import { BERTH_BIN } from "../support/berth-process.ts";
import { killAgentProcesses, patchSpec, PodSampler, spawnAgentProcess, viewOf, waitConverged } from "../agent/rollout-support.ts";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "../..");
const BUNDLES = ["deploy/api", "deploy/api/migrations", "deploy/agent/overlays/cluster", "deploy/agent/overlays/namespaced"];
const kindsOf = (yaml: string) => parseAllDocuments(yaml).map((doc) => `${doc.toJS().kind}/${doc.toJS().metadata.name}`).sort();

describe("kubectl kustomize renders each bundle", () => {
  it.each([
    ["deploy/api", ["Deployment/berth-api", "Job/berth-migrate-0.1.0", "Namespace/berth-api", "NetworkPolicy/berth-api", "PodDisruptionBudget/berth-api", "Service/berth-api"]],
    ["deploy/api/migrations", ["Job/berth-migrate-0.1.0"]],
  ])("%s", async (dir, kinds) => {
    const { stdout } = await run("kubectl", ["kustomize", join(ROOT, dir)]);
    expect(kindsOf(stdout)).toEqual(kinds);
  });

  it.each([
    ["deploy/agent/overlays/cluster", ["ClusterRole/berth-agent", "ClusterRoleBinding/berth-agent"]],
    ["deploy/agent/overlays/namespaced", ["ClusterRole/berth-agent-nodes", "ClusterRoleBinding/berth-agent-nodes", "Namespace/berth-demo", "Namespace/berth-research", "Role/berth-agent", "Role/berth-agent", "RoleBinding/berth-agent", "RoleBinding/berth-agent"]],
  ])("%s: the base plus its RBAC", async (dir, rbac) => {
    const { stdout } = await run("kubectl", ["kustomize", join(ROOT, dir)]);
    const kinds = kindsOf(stdout);
    for (const object of ["Deployment/berth-agent", "Namespace/berth-system", "Role/berth-agent-leader-election", "RoleBinding/berth-agent-leader-election", "ServiceAccount/berth-agent"]) {
      expect(kinds).toContain(object);
    }
    expect(kinds.find((k) => k.startsWith("Secret/berth-agent-"))).toBeDefined(); // the secretGenerator's hashed name
    for (const object of rbac) expect(kinds).toContain(object);
    // The Deployment's secretKeyRefs follow the generated Secret's hashed name.
    const deployment = parseAllDocuments(stdout).map((d) => d.toJS()).find((o) => o.kind === "Deployment");
    const secretName = kinds.find((k) => k.startsWith("Secret/"))!.slice("Secret/".length);
    expect(deployment.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name).toBe(secretName);
    expect(deployment.spec.replicas).toBe(2);
  });
});

describe("the bundles on a simulated cluster, and a namespaced agent", () => {
  let world: AgentWorld;
  let dir: string;
  let kubeconfig: string;
  const requests: ObservedRequest[] = [];
  let recording = false;

  beforeAll(async () => {
    // Project "demo" lives in berth-demo, one of the namespaced overlay's namespaces.
    world = await startAgentWorld({ project: "demo", sim: { onRequest: (r) => void (recording && requests.push(r)) } });
    dir = mkdtempSync(join(tmpdir(), "berth-deploy-"));
    kubeconfig = writeKubeconfig(join(dir, "kubeconfig"), world.cluster!.url);
  }, 120_000);
  afterAll(async () => {
    await world?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const kubectl = (...args: string[]) => run("kubectl", ["--kubeconfig", kubeconfig, ...args], { cwd: ROOT });

  it.each(BUNDLES)("kubectl apply -k %s", async (bundle) => {
    const { stdout } = await kubectl("apply", "-k", bundle);
    expect(stdout).toMatch(/(created|configured|unchanged)/);
    expect(stdout).not.toMatch(/error/i);
  }, 30_000);

  it("holds what the bundles applied: API objects, both modes' RBAC, the project namespaces' Roles", async () => {
    const { stdout: api } = await kubectl("get", "deployment,service,poddisruptionbudget,job,networkpolicy", "-n", "berth-api", "-o", "name");
    expect(api.trim().split("\n").sort()).toEqual([
      "deployment.apps/berth-api",
      "job.batch/berth-migrate-0.1.0",
      "networkpolicy.networking.k8s.io/berth-api",
      "poddisruptionbudget.policy/berth-api",
      "service/berth-api",
    ]);
    const { stdout: cluster } = await kubectl("get", "clusterrole", "berth-agent", "berth-agent-nodes", "-o", "name");
    expect(cluster.trim().split("\n")).toEqual(["clusterrole.rbac.authorization.k8s.io/berth-agent", "clusterrole.rbac.authorization.k8s.io/berth-agent-nodes"]);
    for (const ns of ["berth-demo", "berth-research"]) {
      const { stdout } = await kubectl("get", "role,rolebinding", "-n", ns, "-o", "name");
      expect(stdout.trim().split("\n")).toEqual(["role.rbac.authorization.k8s.io/berth-agent", "rolebinding.rbac.authorization.k8s.io/berth-agent"]);
    }
    const { stdout: env } = await kubectl("get", "deployment", "berth-agent", "-n", "berth-system", "-o", "jsonpath={.spec.template.spec.containers[0].env[*].name}");
    expect(env.split(" ")).toEqual(["BERTH_API_URL", "BERTH_AGENT_TOKEN", "POD_NAMESPACE", "POD_NAME", "BERTH_AGENT_NAMESPACES"]);
  }, 30_000);

  it("a `berth agent --namespaces` process brings a berth-demo deployment to Ready, refuses one outside its list, and never asks cluster-wide beyond nodes", async () => {
    const created = await world.call("POST", "/v1/clusters", { name: "namespaced" });
    expect(created.status).toBe(201);
    const { token } = await registerAgent(world.server.url, created.body.joinToken);
    // The in-process agent of the world is never started: this process is the cluster's only agent.
    recording = true;
    const child = spawn(process.execPath, [BERTH_BIN, "agent", "--api", world.server.url, "--token", token, "--kubeconfig", kubeconfig], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, BERTH_AGENT_NAMESPACES: "berth-demo,berth-research" },
    });
    let err = "";
    child.stderr!.on("data", (chunk) => (err += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      const started = await eventually(() => `the start line; stderr:\n${err}`, async () => err.split("\n").find((line) => line.includes("berth agent started")));
      expect(JSON.parse(started)).toMatchObject({ mode: "namespaced", namespaces: ["berth-demo", "berth-research"] });

      // Deployments go to the cluster named in spec.clusterId; the world's project is "demo".
      const make = async (name: string, projectId: string) => {
        const res = await world.call("POST", "/v1/deployments", {
          name,
          projectId,
          spec: { clusterId: created.body.cluster.id, model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" }, roles: [{ name: "main", replicas: 1, resources: { gpus: 1 } }] },
        });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        return res.body.id as string;
      };
      const inside = await make("inside", world.projectId);
      const other = await world.call("POST", "/v1/projects", { name: "other" });
      expect(other.status).toBe(201);
      const outside = await make("outside", other.body.id);

      await world.readyDeployment(inside, { timeoutMs: 60_000, what: `berth-demo deployment Ready; agent stderr:\n${err}` });
      // The inventory says its free-GPU count only subtracts the pods of the listed namespaces.
      const { body: cluster } = await world.call("GET", `/v1/clusters/${created.body.cluster.id}`);
      expect(cluster.inventory.podScope).toEqual({ namespaces: ["berth-demo", "berth-research"] });
      expect(cluster.inventory.nodes.map((n: { name: string }) => n.name)).toEqual(["gpu-a"]);
      const refused = await eventually("the outside deployment's refusal", async () => {
        const { body } = await world.call("GET", `/v1/deployments/${outside}`);
        return body.status?.message?.includes("allow-list") ? body : undefined;
      });
      expect(refused.status.phase).not.toBe("Ready");
      expect(refused.status.message).toMatch(/namespace berth-other is not in this agent's allow-list \(berth-demo, berth-research\)/);
    } finally {
      recording = false;
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    const { stdout: namespaces } = await kubectl("get", "namespace", "berth-other", "--ignore-not-found", "-o", "name");
    expect(namespaces.trim()).toBe(""); // never created
    const reads = requests.filter((r) => r.method === "GET").map((r) => r.path);
    expect(reads.length).toBeGreaterThan(10);
    // Cluster-wide collections: /api/v1/<kind> or /apis/<group>/<v>/<kind> with no namespace segment.
    const clusterWide = [...new Set(reads.filter((p) => /^\/apis?\/(?:[a-z.]+\/)?v1\/[a-z]+$/.test(p)))].sort();
    expect(clusterWide).toEqual(["/api/v1/nodes"]);
    const namespaceReads = [...new Set(reads.filter((p) => p.startsWith("/api/v1/namespaces/") && p.split("/").length === 5))].sort();
    expect(namespaceReads).toEqual(["/api/v1/namespaces/berth-demo", "/api/v1/namespaces/berth-research"]);
    const inOtherNamespaces = reads.filter((p) => p.startsWith("/api") && p.includes("/namespaces/") && !/\/namespaces\/berth-(demo|research)(\/|$)/.test(p));
    expect(inOtherNamespaces).toEqual([]);
    expect(requests.filter((r) => r.method !== "GET" && r.path.startsWith("/api/v1/namespaces") && r.path.split("/").length <= 5)).toEqual([]);
  }, 120_000);
});

describe("a namespaced agent under RBAC: the ServiceAccount token of the namespaced overlay", () => {
  let world: AgentWorld;
  let dir: string;
  let adminKubeconfig: string;
  let agentKubeconfig: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "berth-deploy-rbac-"));
    // kubectl sends a token only over HTTPS: a self-signed certificate for 127.0.0.1.
    const [key, cert] = [join(dir, "key.pem"), join(dir, "cert.pem")];
    await run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert]);
    world = await startAgentWorld({ project: "demo", sim: { tls: { key: readFileSync(key), cert: readFileSync(cert) }, token: true } });
    adminKubeconfig = writeKubeconfig(join(dir, "admin-kubeconfig"), world.cluster!.url, { token: world.cluster!.token! });
    await run("kubectl", ["--kubeconfig", adminKubeconfig, "apply", "-k", "deploy/agent/overlays/namespaced"], { cwd: ROOT });
    const { stdout: token } = await run("kubectl", ["--kubeconfig", adminKubeconfig, "create", "token", "berth-agent", "-n", "berth-system", "--duration", "1h"]);
    agentKubeconfig = writeKubeconfig(join(dir, "agent-kubeconfig"), world.cluster!.url, { token: token.trim() });
  }, 120_000);
  afterAll(async () => {
    await world?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const asAgent = (...args: string[]) => run("kubectl", ["--kubeconfig", agentKubeconfig, ...args]).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (e: { code?: number; stderr?: string }) => ({ code: e.code ?? -1, stderr: e.stderr ?? "" }),
  );

  it("is refused a cluster-wide pods list and Secrets outside its namespaces (403)", async () => {
    const pods = await asAgent("get", "pods", "-A");
    expect(pods.code).not.toBe(0);
    expect(pods.stderr.trim()).toBe(
      'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:berth-system:berth-agent" cannot list resource "pods" in API group "" at the cluster scope',
    );
    const secrets = await asAgent("get", "secrets", "-n", "kube-system");
    expect(secrets.stderr).toMatch(/secrets is forbidden: .* cannot list resource "secrets" in API group "" in the namespace "kube-system"/);
    expect((await asAgent("get", "pods", "-n", "berth-demo")).code).toBe(0);
    expect((await asAgent("get", "namespace", "berth-demo")).code).toBe(0);
    expect((await asAgent("get", "namespace", "default")).code).not.toBe(0);
  }, 30_000);

  it("two `berth agent --namespaces --leader-elect` replicas with that token: one leads, the SIGKILLed leader's standby takes over and reconciles, no pod duplicated", async () => {
    const created = await world.call("POST", "/v1/clusters", { name: "rbac" });
    expect(created.status).toBe(201);
    const { token } = await registerAgent(world.server.url, created.body.joinToken);
    // As the overlay's Deployment runs them: leader election in berth-system, identity from the pod name.
    const args = ["--api", world.server.url, "--token", token, "--kubeconfig", agentKubeconfig, "--namespaces", "berth-demo,berth-research", "--leader-elect"];
    args.push("--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms");
    const agents = ["agent-a", "agent-b"].map((name) => ({ name, ...spawnAgentProcess(args, { POD_NAME: name, POD_NAMESPACE: "berth-system" }) }));
    const stderr = () => agents.map((a) => `${a.name}:\n${a.stderr().slice(-3000)}`).join("\n");
    try {
      const leader = await eventually(() => `a leader; ${stderr()}`, async () => agents.find((a) => a.stderr().includes('"msg":"became leader"')), 60_000, 50);
      const standby = agents.find((a) => a !== leader)!;
      await eventually(() => `${standby.name} standing by; ${stderr()}`, async () => standby.stderr().includes(`standing by, leader is ${leader.name}`), 30_000, 50);
      const res = await world.call("POST", "/v1/deployments", {
        name: "rbac",
        projectId: world.projectId,
        spec: { clusterId: created.body.cluster.id, model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" }, roles: [{ name: "main", replicas: 1, resources: { gpus: 1 } }] },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const id = res.body.id as string;
      await world.readyDeployment(id, { timeoutMs: 60_000, what: `Ready under RBAC; ${stderr()}` });

      // Pods sampled every 100 ms from the kill on: the standby must not duplicate the leader's pod.
      const sampler = new PodSampler(world.kube, "berth-demo", id);
      try {
        leader.child.kill("SIGKILL");
        await eventually(() => `${standby.name} leading; ${stderr()}`, async () => standby.stderr().includes('"msg":"became leader"'), 20_000, 50);
        await patchSpec((...a) => world.call(...a), id, () => ({ roles: [{ name: "main", replicas: 2 }] }));
        await waitConverged((...a) => world.call(...a), id, 2, { timeoutMs: 60_000, what: stderr });
      } finally {
        await sampler.stop();
      }
      expect(sampler.errors).toEqual([]);
      for (const { pods } of sampler.samples) {
        const slots = pods.map((p) => p.replica);
        expect(new Set(slots).size, `pods ${pods.map((p) => p.name)}`).toBe(slots.length);
      }
      const after = (await world.kube.core.listNamespacedPod({ namespace: "berth-demo" })).items.map(viewOf);
      expect(after.map((p) => p.name).sort()).toEqual(["rbac-main-r0-m0", "rbac-main-r1-m0"]);
      // The pod the first leader made survived the takeover.
      expect(sampler.samples[0]!.pods.map((p) => p.uid).every((uid) => after.some((p) => p.uid === uid))).toBe(true);
      // Nothing either agent did was refused by RBAC or the admission policy.
      expect(stderr()).not.toMatch(/forbidden|denied request/i);
    } finally {
      await killAgentProcesses(agents);
    }
  }, 240_000);
});
