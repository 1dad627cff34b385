// The agent's resilience (docs/design.md §1.3), against a real `berth serve` and the simulated cluster:
// an agent killed mid-rollout and started afresh finishes it without extra pods, one instance
// at a time; a 20 s API outage deletes nothing and the agent reconnects on its own; kubectl
// lists exactly the objects the agent rendered. Pods are sampled every 100 ms throughout.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  LABELS,
  MANAGED_BY,
  renderInstancePods,
  renderInstanceService,
  renderRoleService,
  type RenderInput,
  specHashOf,
} from "../../k8s/render/index.ts";
import { berthPrograms, type SimCluster, startSimCluster, writeKubeconfig } from "../../k8s/sim/index.ts";
import { type Agent, createAgent } from "../../src/agent/agent.ts";
import { createApiClient, registerAgent } from "../../src/agent/api-client.ts";
import { createKube, type Kube } from "../../src/agent/kube.ts";
import { systemClock } from "../../src/domain/clock.ts";
import type { DeploymentSpec } from "../../src/domain/deployment-spec.ts";
import { type BerthServer, freePort, startBerthServer } from "../support/berth-process.ts";
import { adminCaller, chat as complete, eventually, FAST_AGENT_CONFIG, quiet, ROUTER_IMAGE } from "./e2e-support.ts";
import {
  type AgentProcess,
  checkRollout,
  killAgentProcesses,
  NEW_IMAGE,
  OLD_IMAGE,
  ONE_AT_A_TIME,
  patchSpec as patchSpecOf,
  PodSampler,
  type PodView,
  spawnAgentProcess,
  viewOf,
  waitConverged as waitConvergedOf,
} from "./rollout-support.ts";

const OUTAGE_MS = 20_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = promisify(execFile);

describe("the agent's resilience", () => {
  let workDir: string;
  let dataDir: string;
  let port: number;
  let server: BerthServer;
  let cluster: SimCluster;
  let kubeconfig: string;
  let kube: Kube;
  let clusterId: string;
  let agentToken: string;
  const agents: Agent[] = [];
  /** The in-process agent of the "sim" cluster that is running now, if any. */
  let current: Agent | undefined;
  const processes: AgentProcess[] = [];

  const call = adminCaller(() => server);

  /** A fresh agent in this process: its own clients, nothing shared with any earlier one. */
  const startAgent = (token: string): Agent => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions(cluster.kubeConfigOptions);
    const agent = createAgent({
      kube: createKube(kc),
      api: createApiClient({ baseUrl: server.url, token, retry: { attempts: 2, baseMs: 50, capMs: 200 } }),
      clock: systemClock,
      config: { routerImage: ROUTER_IMAGE, ...FAST_AGENT_CONFIG, resyncMs: 500 },
      logger: quiet,
    });
    agent.start();
    agents.push(agent);
    current = agent;
    return agent;
  };

  /** `berth agent` as its own process (default intervals: settle 1 s). */
  const startAgentProcess = (token: string): AgentProcess => {
    const agent = spawnAgentProcess(["--api", server.url, "--token", token, "--kubeconfig", kubeconfig, "--router-image", ROUTER_IMAGE]);
    processes.push(agent);
    return agent;
  };

  const registerCluster = async (name: string) => {
    const created = await call("POST", "/v1/clusters", { name });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { token } = await registerAgent(server.url, created.body.joinToken);
    return { id: created.body.cluster.id as string, token };
  };

  /** The image change every rollout here makes, and the spec hash its pods carry. */
  const newHashFor = (spec: DeploymentSpec) => specHashOf({ ...spec, engine: { ...spec.engine, image: NEW_IMAGE } }, "main");

  const createDeployment = async (project: string, name: string, replicas: number, onCluster: string, role: object = {}) => {
    const created = await call("POST", "/v1/projects", { name: project });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const deployment = await call("POST", "/v1/deployments", {
      name,
      projectId: created.body.id,
      spec: {
        clusterId: onCluster,
        model: { name: "Qwen/Qwen3-8B" },
        engine: { name: "vllm", image: OLD_IMAGE },
        roles: [{ name: "main", replicas, resources: { gpus: 1 }, ...role }],
      },
    });
    expect(deployment.status, JSON.stringify(deployment.body)).toBe(201);
    return deployment.body.id as string;
  };

  const waitConverged = (id: string, replicas: number, what?: () => string) => waitConvergedOf(call, id, replicas, { what });
  const patchSpec = (id: string, patch: (spec: { engine: object; roles: object[] }) => object) => patchSpecOf(call, id, patch);

  const listPods = async (namespace: string, id: string) =>
    (await kube.core.listNamespacedPod({ namespace, labelSelector: `${LABELS.deploymentId}=${id}` })).items.map(viewOf);

  const chat = async (endpoint: string) => {
    const res = await complete(endpoint, { content: "still there?", maxTokens: 4, timeoutMs: 10_000 });
    const body = JSON.parse(res.text) as { choices?: Array<{ message: { content: string } }> };
    return { status: res.status, content: body.choices?.[0]?.message.content ?? "" };
  };

  const removeDeployment = async (id: string) => {
    const deleted = await call("DELETE", `/v1/deployments/${id}`);
    expect([200, 202, 204]).toContain(deleted.status);
    await eventually(`${id} removed`, async () => (await call("GET", `/v1/deployments/${id}`)).status === 404);
  };

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), "berth-resilience-"));
    dataDir = join(workDir, "data");
    port = await freePort();
    [server, cluster] = await Promise.all([
      startBerthServer({}, { dataDir, port }),
      startSimCluster({
        nodes: [
          { name: "gpu-a", gpuType: "nvidia-h100-80gb", gpus: 8 },
          { name: "gpu-b", gpuType: "nvidia-h100-80gb", gpus: 8 },
        ],
        programs: berthPrograms({ routerImage: ROUTER_IMAGE, simEngineFlags: ["--latency-profile", "turbo"] }),
        timeScale: 0.1,
      }),
    ]);
    kubeconfig = writeKubeconfig(join(workDir, "kubeconfig"), cluster.url);
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions(cluster.kubeConfigOptions);
    kube = createKube(kc);
    ({ id: clusterId, token: agentToken } = await registerCluster("sim"));
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(agents.map((agent) => agent.stop()));
    await killAgentProcesses(processes);
    await cluster?.stop({ now: true });
    await server?.stop();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  }, 60_000);

  it("finishes a rollout after the agent is stopped mid-way and a new one starts, without extra pods", async () => {
    const namespace = "berth-roll";
    const first = startAgent(agentToken);
    const id = await createDeployment("roll", "roll", 3, clusterId, ONE_AT_A_TIME);
    const ready = await waitConverged(id, 3);
    const before = await listPods(namespace, id);
    expect(before.map((p) => p.name).sort()).toEqual(["roll-main-r0-m0", "roll-main-r1-m0", "roll-main-r2-m0"]);
    const oldHash = specHashOf(ready.spec, "main");
    expect(new Set(before.map((p) => p.hash))).toEqual(new Set([oldHash]));

    // Stop the agent as soon as the first stale pod is terminating: the rollout is mid-way.
    let firstStopped: Promise<void> | undefined;
    let atStop: PodView[] = [];
    const sampler = new PodSampler(kube, namespace, id, (pods) => {
      if (!firstStopped && pods.some((p) => p.terminating)) {
        atStop = pods;
        current = undefined;
        firstStopped = first.stop();
      }
    });
    const newHash = newHashFor(ready.spec);
    expect(newHash).not.toBe(oldHash);
    try {
      const patched = await patchSpec(id, () => ({ engine: { image: NEW_IMAGE } }));
      expect(specHashOf(patched.spec, "main")).toBe(newHash);
      await eventually("the first stale pod terminating", async () => firstStopped !== undefined);
      await firstStopped;
      expect(atStop.filter((p) => p.terminating).map((p) => p.name)).toEqual(["roll-main-r2-m0"]);
      await sleep(1_500); // nobody reconciles for a while: the terminating pod goes, nothing replaces it
      const mid = await listPods(namespace, id);
      expect(mid.filter((p) => p.hash === newHash), "the rollout was mid-way when the agent stopped").toEqual([]);

      startAgent(agentToken); // a new agent: its own clients and memory, the same credential
      await waitConverged(id, 3, () => `(samples: ${sampler.samples.length})`);
    } finally {
      await sampler.stop();
    }
    const after = await listPods(namespace, id);
    expect(after.map((p) => p.name).sort()).toEqual(["roll-main-r0-m0", "roll-main-r1-m0", "roll-main-r2-m0"]);
    expect(after.every((p) => p.hash === newHash && p.image === NEW_IMAGE && p.ready)).toBe(true);
    expect(after.some((p) => before.some((b) => b.uid === p.uid))).toBe(false);

    expect(sampler.errors).toEqual([]);
    const report = checkRollout(sampler.samples, 3, new Set(before.map((p) => p.uid)), newHash);
    expect(report.problems).toEqual([]);
    expect(report.worstUnavailable).toBe(1);
    expect(report.newPodsCreated).toBe(3);
    expect(report.replacedOrder).toEqual([2, 1, 0]);
    await removeDeployment(id);
  }, 180_000);

  it("finishes a rollout after `berth agent` is SIGKILLed mid-way and started again", async () => {
    const namespace = "berth-rollproc";
    const proc = await registerCluster("proc");
    const first = startAgentProcess(proc.token);
    await eventually(() => `the proc cluster connected; agent stderr:\n${first.stderr()}`, async () => {
      const res = await call("GET", `/v1/clusters/${proc.id}`);
      return res.body.status.phase === "Connected" && res.body.inventory ? res.body : undefined;
    });
    const id = await createDeployment("rollproc", "roll", 3, proc.id, ONE_AT_A_TIME);
    const ready = await waitConverged(id, 3, () => `; agent stderr:\n${first.stderr()}`);
    const before = await listPods(namespace, id);
    const oldHash = specHashOf(ready.spec, "main");
    expect(new Set(before.map((p) => p.hash))).toEqual(new Set([oldHash]));

    // SIGKILL the agent process the moment the first replacement pod exists (not yet Ready):
    // whatever it held in memory is gone, its successor has only the cluster and the API.
    let killedWith: PodView[] | undefined;
    const newHash = newHashFor(ready.spec);
    const sampler = new PodSampler(kube, namespace, id, (pods) => {
      if (!killedWith && pods.some((p) => p.hash === newHash)) {
        killedWith = pods;
        first.child.kill("SIGKILL");
      }
    });
    let second: AgentProcess | undefined;
    try {
      const patched = await patchSpec(id, () => ({ engine: { image: NEW_IMAGE } }));
      expect(specHashOf(patched.spec, "main")).toBe(newHash);
      expect(await first.exited).toEqual({ code: null, signal: "SIGKILL" });
      expect(killedWith!.filter((p) => p.hash === newHash).map((p) => p.name)).toEqual(["roll-main-r2-m0"]);
      await sleep(1_500);
      const mid = await listPods(namespace, id);
      expect(mid.filter((p) => p.hash === newHash).length, "the rollout was mid-way when the agent died").toBe(1);

      second = startAgentProcess(proc.token);
      await waitConverged(id, 3, () => `; agent stderr:\n${second!.stderr()}`);
    } finally {
      await sampler.stop();
    }
    const after = await listPods(namespace, id);
    expect(after.map((p) => p.name).sort()).toEqual(["roll-main-r0-m0", "roll-main-r1-m0", "roll-main-r2-m0"]);
    expect(after.every((p) => p.hash === newHash && p.image === NEW_IMAGE && p.ready)).toBe(true);

    expect(sampler.errors).toEqual([]);
    const report = checkRollout(sampler.samples, 3, new Set(before.map((p) => p.uid)), newHash);
    expect(report.problems).toEqual([]);
    expect(report.worstUnavailable).toBe(1);
    expect(report.newPodsCreated).toBe(3);
    expect(report.replacedOrder).toEqual([2, 1, 0]);

    await removeDeployment(id);
    second.child.kill("SIGTERM");
    expect(await second.exited).toEqual({ code: 0, signal: null });
  }, 180_000);

  it("deletes nothing while the API is down for 20 s, keeps serving, and reconnects on its own", async () => {
    const namespace = "berth-outage";
    if (!current) startAgent(agentToken); // the agent the first test started, or a new one
    const id = await createDeployment("outage", "steady", 2, clusterId);
    const ready = await waitConverged(id, 2);
    const endpoint: string = ready.status.endpoint;
    const before = await listPods(namespace, id);
    const uids = before.map((p) => p.uid).sort();
    expect(uids).toHaveLength(2);

    const sampler = new PodSampler(kube, namespace, id);
    let restartedAt = 0;
    try {
      // SIGTERM: the API must actually go away (bounded), with the agent's long-poll open on it.
      const sigterm = Date.now();
      const stopping = server.stop();
      const exitedInTime = await Promise.race([stopping.then(() => true), sleep(10_000).then(() => false)]);
      if (!exitedInTime) server.child.kill("SIGKILL");
      await stopping;
      expect.soft(exitedInTime, `berth serve exits within 10 s of SIGTERM (took ${Date.now() - sigterm} ms)`).toBe(true);
      const down = Date.now();
      await expect(fetch(`${server.url}/v1/clusters`, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow();

      await sleep(OUTAGE_MS / 2);
      const midway = await chat(endpoint);
      expect(midway.status).toBe(200);
      expect(midway.content.length).toBeGreaterThan(0);
      await sleep(Math.max(0, down + OUTAGE_MS - Date.now()));
      const late = await chat(endpoint);
      expect(late.status).toBe(200);
      expect(late.content.length).toBeGreaterThan(0);
      expect(Date.now() - down).toBeGreaterThanOrEqual(OUTAGE_MS);
    } finally {
      restartedAt = Date.now();
      if (server.child.exitCode !== null || server.child.signalCode !== null) server = await startBerthServer({}, { dataDir, port });
    }
    expect(server.url).toBe(`http://127.0.0.1:${port}`);

    // Its heartbeat after the restart shows it reconnected without any help.
    let reconnected: { status: { phase: string; lastHeartbeatAt: string } };
    try {
      reconnected = await eventually("a heartbeat after the restart", async () => {
        const res = await call("GET", `/v1/clusters/${clusterId}`);
        return res.body.status.phase === "Connected" && Date.parse(res.body.status.lastHeartbeatAt) > restartedAt ? res.body : undefined;
      });
    } finally {
      await sampler.stop();
    }
    expect(reconnected.status.phase).toBe("Connected");

    expect(sampler.errors).toEqual([]);
    const span = sampler.samples.at(-1)!.at - sampler.samples[0]!.at;
    expect(span).toBeGreaterThanOrEqual(OUTAGE_MS);
    expect(sampler.samples.length).toBeGreaterThan(50);
    const changed = sampler.samples.filter(({ pods }) => pods.map((p) => p.uid).sort().join() !== uids.join() || pods.some((p) => p.terminating));
    expect(changed.map(({ at, pods }) => ({ at: new Date(at).toISOString(), pods }))).toEqual([]);
    expect(sampler.samples.every(({ pods }) => pods.every((p) => p.ready))).toBe(true);

    // Desired state flows again: a scale-up is converged, the first two pods kept.
    await patchSpec(id, (spec) => ({ roles: spec.roles.map((role) => ({ ...role, replicas: 3 })) }));
    await waitConverged(id, 3);
    const after = await listPods(namespace, id);
    expect(after.map((p) => p.name).sort()).toEqual(["steady-main-r0-m0", "steady-main-r1-m0", "steady-main-r2-m0"]);
    expect(after.filter((p) => uids.includes(p.uid)).map((p) => p.name).sort()).toEqual(["steady-main-r0-m0", "steady-main-r1-m0"]);
    await removeDeployment(id);
  }, 180_000);

  it("kubectl lists exactly the pods and services the agent rendered", async () => {
    const namespace = "berth-seen";
    if (!current) startAgent(agentToken);
    const id = await createDeployment("seen", "seen", 2, clusterId);
    const ready = await waitConverged(id, 2);
    const render: RenderInput = {
      deployment: { id, name: "seen", projectName: "seen", spec: ready.spec, generation: ready.generation },
      options: { routerImage: ROUTER_IMAGE },
    };
    const expectedPods = [0, 1].flatMap((replica) => renderInstancePods(render, "main", replica));
    const expectedServices = [renderRoleService(render, "main"), ...[0, 1].flatMap((r) => renderInstanceService(render, "main", r) ?? [])];
    expect(expectedPods.map((p) => p.metadata!.name)).toEqual(["seen-main-r0-m0", "seen-main-r1-m0"]);

    const { stdout } = await run(
      "kubectl",
      ["--kubeconfig", kubeconfig, "get", "pods,services", "-n", namespace, "-l", `${LABELS.managedBy}=${MANAGED_BY}`, "-o", "json"],
      { timeout: 30_000 },
    );
    const listed = JSON.parse(stdout) as { kind: string; items: Array<k8s.V1Pod | k8s.V1Service> };
    expect(listed.kind).toBe("List");
    const pods = listed.items.filter((o) => o.kind === "Pod") as k8s.V1Pod[];
    const services = listed.items.filter((o) => o.kind === "Service") as k8s.V1Service[];
    expect(listed.items.length).toBe(pods.length + services.length);
    const byName = <T extends { metadata?: k8s.V1ObjectMeta }>(items: T[]) =>
      Object.fromEntries(items.map((o) => [o.metadata!.name!, o.metadata!.labels]));
    expect(byName(pods)).toEqual(byName(expectedPods));
    expect(byName(services)).toEqual(byName(expectedServices));

    const hash = specHashOf(ready.spec, "main");
    for (const [replica, pod] of pods.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!)).entries()) {
      expect(pod.metadata!.labels).toMatchObject({
        [LABELS.managedBy]: MANAGED_BY,
        [LABELS.deployment]: "seen",
        [LABELS.deploymentId]: id,
        [LABELS.role]: "main",
        [LABELS.roleKind]: "server",
        [LABELS.replica]: String(replica),
        [LABELS.member]: "0",
        [LABELS.specHash]: hash,
      });
      expect(pod.status?.phase).toBe("Running");
      expect(pod.spec?.containers?.[0]?.image).toBe(OLD_IMAGE);
    }
    expect(services[0]!.spec?.clusterIP).toBe(new URL(ready.status.endpoint).hostname);

    // execFile rejects on a non-zero exit: resolving is kubectl's exit 0.
    const table = await run("kubectl", ["--kubeconfig", kubeconfig, "get", "pods", "-A"], { timeout: 30_000 });
    const rows = table.stdout.trim().split("\n").map((line) => line.trim().split(/\s+/));
    expect(rows[0]).toEqual(["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    for (const name of ["seen-main-r0-m0", "seen-main-r1-m0"]) {
      expect(rows.find((row) => row[0] === namespace && row[1] === name)?.slice(0, 4)).toEqual([namespace, name, "1/1", "Running"]);
    }
  }, 120_000);
});
