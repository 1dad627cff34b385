// Agent high availability (docs/design.md §13.6): two real `berth agent --leader-elect` processes
// against a real `berth serve` and each cluster (the simulated one; the real control plane, with
// the agents inside its network namespace as pods would be), with a short lease (3 s / 2 s / 0.5 s).
// Exactly one leads; the leader SIGKILLed mid-rollout is replaced by the standby within lease
// duration + retry period, which finishes the rollout without a duplicated or wrongly deleted pod
// (pods sampled every 100 ms throughout); a SIGTERMed leader releases the Lease and the standby
// takes over within a retry period; a leader that sees another holder exits non-zero at once.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { specHashOf } from "../../k8s/render/index.ts";
import { writeKubeconfig } from "../../k8s/sim/index.ts";
import { type AdminCall, type AgentWorld, type Backend, E2E_BACKENDS, eventually, ROUTER_IMAGE, startAgentWorld } from "./e2e-support.ts";
import {
  type AgentProcess,
  checkRollout,
  killAgentProcesses,
  NEW_IMAGE,
  OLD_IMAGE,
  ONE_AT_A_TIME,
  patchSpec as patchSpecOf,
  PodSampler,
  spawnAgentProcess,
  viewOf,
  waitConverged as waitConvergedOf,
} from "./rollout-support.ts";

const LEASE_NAMESPACE = "berth-system";
const LEASE_DURATION_MS = 3_000;
const RENEW_DEADLINE_MS = 2_000;
const RETRY_PERIOD_MS = 500;
/** Request latency on a loaded shared machine: the bounds below are the protocol's plus this. */
const LATENCY_MARGIN_MS = 1_000;
const run = promisify(execFile);

type NamedAgent = AgentProcess & { name: string };

/** Where `berth serve` answers inside the real cluster's network namespace. */
const API_INSIDE = { host: "10.244.0.2", port: 8787 };

describe.each<Backend>(E2E_BACKENDS)("agent high availability with Lease leader election, on the %s cluster", (backend) => {
  let world: AgentWorld;
  let workDir: string;
  /** The admin's kubeconfig for kubectl here, and the one the agent processes use where they run. */
  let kubeconfig: string;
  let agentKubeconfig: string;
  let apiUrl: string;
  /** On the real cluster the agents run inside its network namespace, where Service addresses route. */
  let wrap: string[] = [];
  /** The deployment the first test creates and the second scales. */
  let deploymentId = "";
  const processes: NamedAgent[] = [];
  const call: AdminCall = (...args) => world.call(...args);

  /** `berth agent --leader-elect` as its own process, identity and namespace from the Downward API's env vars. */
  const startAgentProcess = (name: string): NamedAgent => {
    const args = ["--api", apiUrl, "--token", world.token, "--kubeconfig", agentKubeconfig, "--router-image", ROUTER_IMAGE, "--leader-elect"];
    args.push("--leader-elect-lease-duration", `${LEASE_DURATION_MS}ms`, "--leader-elect-renew-deadline", `${RENEW_DEADLINE_MS}ms`, "--leader-elect-retry-period", `${RETRY_PERIOD_MS}ms`);
    const agent = { name, ...spawnAgentProcess(args, { POD_NAME: name, POD_NAMESPACE: LEASE_NAMESPACE }, wrap) };
    processes.push(agent);
    return agent;
  };

  const readLease = () => world.kube.coordination.readNamespacedLease({ namespace: LEASE_NAMESPACE, name: "berth-agent" });
  const holder = async () => (await readLease()).spec?.holderIdentity ?? "";
  /** Polls the Lease every 50 ms until `name` holds it; the time from `since` it took. */
  const heldBy = async (name: string, since: number, timeoutMs: number) => {
    await eventually(`the Lease held by ${name}`, async () => (await holder()) === name, timeoutMs, 50);
    return Date.now() - since;
  };
  const exitedWithin = (agent: NamedAgent, ms: number) =>
    Promise.race([agent.exited, new Promise<undefined>((resolve) => setTimeout(resolve, ms))]);

  const waitConverged = (id: string, replicas: number, image: string) => waitConvergedOf(call, id, replicas, { image, timeoutMs: 120_000, what: () => `; agents' stderr:\n${processes.map((p) => p.stderr().slice(-1_500)).join("\n")}` });
  const patchSpec = (id: string, spec: object) => patchSpecOf(call, id, () => spec);

  beforeAll(async () => {
    world = await startAgentWorld({ backend, project: "ha" });
    workDir = mkdtempSync(join(tmpdir(), "berth-ha-"));
    if (world.real) {
      const { cluster } = world.real;
      await cluster.relay.expose({ host: "127.0.0.1", port: Number(new URL(world.server.url).port) }, API_INSIDE);
      apiUrl = `http://${API_INSIDE.host}:${API_INSIDE.port}`;
      kubeconfig = world.kubeconfigPath;
      agentKubeconfig = cluster.admin.inside;
      wrap = ["ip", "netns", "exec", cluster.namespace];
    } else {
      apiUrl = world.server.url;
      kubeconfig = agentKubeconfig = writeKubeconfig(join(workDir, "kubeconfig"), world.cluster!.url);
    }
    // The install creates the agent's namespace; the Lease lives there.
    await world.kube.core.createNamespace({ body: { metadata: { name: LEASE_NAMESPACE } } });
  }, 120_000);

  afterAll(async () => {
    await killAgentProcesses(processes);
    await world?.stop();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  }, 60_000);

  it("one leader; SIGKILLed mid-rollout, the standby takes over within lease duration + retry period and finishes it without duplicate or lost pods", async () => {
    const a = startAgentProcess("agent-a");
    const b = startAgentProcess("agent-b");
    // Starting two processes takes long on a loaded machine; the leader is whichever is first.
    const first = await eventually(() => `a leader; stderr:\n${a.stderr()}\n${b.stderr()}`, async () => [a, b].find((p) => p.stderr().includes('"msg":"became leader"')), 60_000, 50);
    const standby = first === a ? b : a;
    await eventually(`${standby.name} standing by`, async () => standby.stderr().includes(`standing by, leader is ${first.name}`), 10_000, 50);
    expect(await holder()).toBe(first.name);
    const printed = await run("kubectl", ["--kubeconfig", kubeconfig, "get", "leases", "-n", LEASE_NAMESPACE], { timeout: 30_000 });
    const [heading, row, ...more] = printed.stdout.trimEnd().split("\n");
    expect(heading).toMatch(/^NAME\s+HOLDER\s+AGE$/);
    expect(row).toMatch(new RegExp(`^berth-agent\\s+${first.name}\\s+\\d+s$`));
    expect(more).toEqual([]);

    const id = (deploymentId = await world.create("ha", {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: OLD_IMAGE },
      roles: [{ name: "main", replicas: 3, resources: { gpus: 1 }, ...ONE_AT_A_TIME }],
    }));
    const ready = await waitConverged(id, 3, OLD_IMAGE);
    const namespace = "berth-ha";
    const before = (await world.kube.core.listNamespacedPod({ namespace })).items.map(viewOf);
    expect(before.map((p) => p.name).sort()).toEqual(["ha-main-r0-m0", "ha-main-r1-m0", "ha-main-r2-m0"]);
    // The standby did nothing: every pod was created by one process, which the Lease names.
    expect(standby.stderr()).not.toContain('"msg":"became leader"');
    const transitionsBefore = (await readLease()).spec?.leaseTransitions ?? 0;

    // SIGKILL the leader as soon as the rollout's first stale pod is terminating: mid-way.
    let killedAt: number | undefined;
    const sampler = new PodSampler(world.kube, namespace, id, (pods) => {
      if (killedAt === undefined && pods.some((p) => p.terminating)) {
        killedAt = Date.now();
        first.child.kill("SIGKILL");
      }
    });
    const newHash = specHashOf({ ...ready.spec, engine: { ...ready.spec.engine, image: NEW_IMAGE } }, "main");
    let takeoverMs: number;
    try {
      await patchSpec(id, { engine: { image: NEW_IMAGE } });
      await eventually("the first stale pod terminating", async () => killedAt !== undefined, 60_000, 50);
      expect((await first.exited).signal).toBe("SIGKILL");
      takeoverMs = await heldBy(standby.name, killedAt!, LEASE_DURATION_MS + RETRY_PERIOD_MS + 10_000);
      await waitConverged(id, 3, NEW_IMAGE);
    } finally {
      await sampler.stop();
    }
    process.stderr.write(`[agent-ha] SIGKILL → standby holds the Lease after ${takeoverMs} ms (bound ${LEASE_DURATION_MS + RETRY_PERIOD_MS} ms + ${LATENCY_MARGIN_MS} ms)\n`);
    expect(takeoverMs).toBeLessThanOrEqual(LEASE_DURATION_MS + RETRY_PERIOD_MS + LATENCY_MARGIN_MS);
    // Not before the lease could have expired: the standby waited for it.
    expect(takeoverMs).toBeGreaterThanOrEqual(LEASE_DURATION_MS - RETRY_PERIOD_MS);
    expect(standby.stderr()).toContain(`"previousHolder":"${first.name}"`);
    expect((await readLease()).spec?.leaseTransitions).toBe(transitionsBefore + 1);

    const oldUids = new Set(before.map((p) => p.uid));
    const { problems, newPodsCreated } = checkRollout(sampler.samples, 3, oldUids, newHash);
    expect(sampler.errors).toEqual([]);
    expect(sampler.samples.length).toBeGreaterThan(20);
    expect(problems).toEqual([]);
    expect(newPodsCreated).toBe(3);
    const after = (await world.kube.core.listNamespacedPod({ namespace })).items.map(viewOf);
    expect(after.map((p) => p.name).sort()).toEqual(["ha-main-r0-m0", "ha-main-r1-m0", "ha-main-r2-m0"]);
    expect(after.every((p) => p.hash === newHash && p.ready)).toBe(true);
  }, 240_000);

  it("a SIGTERMed leader releases the Lease: the standby takes over within a retry period; a leader seeing another holder exits 1", async () => {
    const leader = processes.find((p) => p.child.exitCode === null && p.child.signalCode === null)!;
    expect(await holder()).toBe(leader.name);
    const c = startAgentProcess("agent-c");
    await eventually(() => `agent-c standing by; stderr:\n${c.stderr()}`, async () => c.stderr().includes(`standing by, leader is ${leader.name}`), 60_000, 50);

    const termAt = Date.now();
    leader.child.kill("SIGTERM");
    const takeoverMs = await heldBy("agent-c", termAt, 10_000);
    const exit = await exitedWithin(leader, 10_000);
    expect(exit, "the old leader exits after releasing").toEqual({ code: 0, signal: null });
    expect(leader.stderr()).toContain('"msg":"leadership released"');
    process.stderr.write(`[agent-ha] SIGTERM → standby holds the Lease after ${takeoverMs} ms (bound ${RETRY_PERIOD_MS} ms + ${LATENCY_MARGIN_MS} ms)\n`);
    // Well under a lease duration: the release, not an expiry, handed it over.
    expect(takeoverMs).toBeLessThan(RETRY_PERIOD_MS + LATENCY_MARGIN_MS);
    // The Lease update is answered before agent-c logs it: wait (bounded) for the line.
    await eventually(() => `agent-c logging "became leader"; stderr:\n${c.stderr()}`, async () => c.stderr().includes('"msg":"became leader"'), 10_000, 50);

    // The new leader reconciles: a scale-up converges.
    const id = deploymentId;
    await patchSpec(id, { roles: [{ name: "main", replicas: 4 }] });
    await waitConverged(id, 4, NEW_IMAGE);

    // Someone else takes the Lease (an operator, a split brain): the leader stops at once, exit 1.
    const current = await readLease();
    await world.kube.coordination.replaceNamespacedLease({
      namespace: LEASE_NAMESPACE,
      name: "berth-agent",
      body: { ...current, spec: { ...current.spec, holderIdentity: "someone-else", renewTime: new k8s.V1MicroTime() } },
    });
    const lost = await exitedWithin(c, RETRY_PERIOD_MS + RENEW_DEADLINE_MS + LATENCY_MARGIN_MS);
    expect(lost, `agent-c exits: ${c.stderr().slice(-400)}`).toEqual({ code: 1, signal: null });
    expect(c.stderr()).toContain('"msg":"leadership lost"');
  }, 180_000);
});
