// The install bundles on a real kube-apiserver, one fresh control plane per agent mode:
// `kubectl apply -k` of each bundle exits 0 (the policy included: the real apiserver validates
// it), what the agent's ServiceAccount may do (`kubectl auth can-i --list` with its own token)
// is held to a committed file per mode, and a `berth agent` process with that token renders a
// deployment with not one write refused, while its status repeats the real scheduler's reason
// for pods that no node runs.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerAgent } from "../../src/agent/api-client.ts";
import { adminCaller, eventually, type AdminCall } from "../agent/e2e-support.ts";
import { killAgentProcesses, spawnAgentProcess, type AgentProcess } from "../agent/rollout-support.ts";
import { type BerthServer, startBerthServer } from "../support/berth-process.ts";
import { CONTROL_PLANE_SETUP_MS, type KubectlRun, kubectlOn, type RealCluster, startRealCluster } from "./support.ts";

const ROOT = join(import.meta.dirname, "../..");
const GOLDEN = join(ROOT, "test/golden/real-cluster");
const UPDATE = process.env.UPDATE_GOLDEN === "1";
const AGENT = "system:serviceaccount:berth-system:berth-agent";
const DENIED = "ValidatingAdmissionPolicy 'berth-agent-confinement' with binding 'berth-agent-confinement' denied request";

const MODES = [
  { mode: "cluster", overlay: "deploy/agent/overlays/cluster", namespaces: ["berth-system", "berth-demo", "kube-system", "default"], agentNamespaces: undefined },
  { mode: "namespaced", overlay: "deploy/agent/overlays/namespaced", namespaces: ["berth-system", "berth-demo", "berth-research", "kube-system", "default"], agentNamespaces: "berth-demo,berth-research" },
] as const;

function expectGolden(name: string, actual: string): void {
  const path = join(GOLDEN, name);
  if (UPDATE) {
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(path, actual);
  }
  if (!existsSync(path)) throw new Error(`golden file ${path} is missing; run with UPDATE_GOLDEN=1 to create it`);
  expect(actual).toBe(readFileSync(path, "utf8"));
}

describe.each(MODES)("the $mode install bundle on a real kube-apiserver", ({ mode, overlay, namespaces, agentNamespaces }) => {
  let cluster: RealCluster;
  let kubectl: ReturnType<typeof kubectlOn>;
  let agentKubeconfigMade: Promise<string> | undefined;
  let server: BerthServer;
  let call: AdminCall;

  beforeAll(async () => {
    [cluster, server] = await Promise.all([startRealCluster(), startBerthServer()]);
    kubectl = kubectlOn(cluster);
    call = adminCaller(server);
  }, CONTROL_PLANE_SETUP_MS);
  afterAll(async () => {
    await Promise.allSettled([cluster?.stop(), server?.stop()]);
  });

  const ok = (run: KubectlRun, what: string) => {
    expect(run.code, `${what}: ${run.stderr}`).toBe(0);
    return run.stdout;
  };
  /** A kubeconfig with a token of the agent's ServiceAccount (the bundle, applied by the tests above, made it). */
  const agentKubeconfig = () =>
    (agentKubeconfigMade ??= kubectl(["create", "token", "berth-agent", "-n", "berth-system", "--duration", "2h"]).then(
      (run) => cluster.tokenKubeconfigs("agent", ok(run, "create token").trim()).outside,
    ));

  it.each(["deploy/api", "deploy/api/migrations", overlay])("kubectl apply -k %s exits 0", async (bundle) => {
    const run = await kubectl(["apply", "-k", bundle], { cwd: ROOT });
    ok(run, `apply -k ${bundle}`);
    expect(run.stdout).toMatch(/created|unchanged/);
    expect(run.stderr).not.toMatch(/error|invalid/i);
  }, 60_000);

  it("holds the policy, its binding and the agent's RBAC as applied", async () => {
    const policies = ok(await kubectl(["get", "validatingadmissionpolicy,validatingadmissionpolicybinding", "-o", "name"]), "get policies");
    expect(policies.trim().split("\n")).toEqual([
      "validatingadmissionpolicy.admissionregistration.k8s.io/berth-agent-confinement",
      "validatingadmissionpolicybinding.admissionregistration.k8s.io/berth-agent-confinement",
    ]);
    // The real apiserver type-checks every expression against the kinds matched; none may fail to compile.
    const status = JSON.parse(ok(await kubectl(["get", "validatingadmissionpolicy", "berth-agent-confinement", "-o", "json"]), "get policy")).status;
    expect(status?.conditions ?? []).not.toContainEqual(expect.objectContaining({ type: "TypeChecked", status: "False" }));
  });

  it(`what the agent's own token may do, per namespace, is test/golden/real-cluster/agent-permissions-${mode}.txt`, async () => {
    const sections: string[] = [];
    for (const namespace of namespaces) {
      const list = ok(await kubectl(["auth", "can-i", "--list", "-n", namespace], { kubeconfig: await agentKubeconfig() }), `can-i --list -n ${namespace}`);
      sections.push(`# kubectl auth can-i --list -n ${namespace} (as ${AGENT})\n${list.trimEnd()}\n`);
    }
    expectGolden(`agent-permissions-${mode}.txt`, sections.join("\n"));
  });

  it("a berth agent process with that token renders a deployment without one refused write, and repeats the scheduler's reason", async () => {
    const created = await call("POST", "/v1/clusters", { name: `real-${mode}` });
    expect(created.status).toBe(201);
    const { token } = await registerAgent(server.url, created.body.joinToken);
    const project = await call("POST", "/v1/projects", { name: "demo" });
    expect(project.status).toBe(201);
    const processes: AgentProcess[] = [];
    try {
      const agent = spawnAgentProcess(["--api", server.url, "--token", token, "--kubeconfig", await agentKubeconfig()], agentNamespaces ? { BERTH_AGENT_NAMESPACES: agentNamespaces } : {});
      processes.push(agent);
      const res = await call("POST", "/v1/deployments", {
        name: "chat",
        projectId: project.body.id,
        spec: {
          clusterId: created.body.cluster.id,
          model: { name: "Qwen/Qwen3-8B" },
          engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
          roles: [{ name: "main", replicas: 1, resources: { gpus: 1 } }],
        },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const id = res.body.id as string;
      // No node: the real scheduler says why, and the status says so rather than Ready.
      let last: unknown;
      const pending = await eventually(
        () => `the scheduler's reason in ${id}'s status (${JSON.stringify(last)}); agent stderr:\n${agent.stderr().slice(-3000)}`,
        async () => {
          if (agent.child.exitCode !== null) throw new Error(`the agent exited ${agent.child.exitCode}`);
          const { body } = await call("GET", `/v1/deployments/${id}`);
          last = body.status;
          // With no Node at all, kube-scheduler's own words: "no nodes available to schedule pods".
          return body.status?.message?.includes("no nodes available to schedule pods") ? body : undefined;
        },
        90_000,
      );
      expect(pending.status.phase).not.toBe("Ready");
      const objects = ok(await kubectl(["get", "pods,services,networkpolicies", "-n", "berth-demo", "-o", "name"]), "get objects");
      expect(objects).toMatch(/^pod\//m);
      expect(objects).toMatch(/^service\//m);
      expect(objects).toMatch(/^networkpolicy\.networking\.k8s\.io\/berth-default-deny$/m);
      const stderr = agent.stderr();
      expect(stderr).not.toContain(DENIED);
      expect(stderr).not.toMatch(/"(code|statusCode)":\s*(403|422)/);
    } finally {
      await killAgentProcesses(processes);
    }
  }, 120_000);
});
