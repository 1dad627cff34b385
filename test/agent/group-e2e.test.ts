// Multi-host instances as groups, end to end (docs/design.md §5.4): a real `berth serve`, a simulated
// cluster of four 8-GPU nodes whose pods are engine-simulator and router processes, the agent
// in-process. A TP16 instance over two pods (size 2, gpus 8: vLLM --nnodes 2, the follower
// --headless) is Ready only with both members Ready; its follower's process killed, or its pod
// deleted, makes it not ready and withdraws the leader from the router within seconds, then the
// group is recreated whole and Ready again; 1 → 2 → 1 under streaming load through the router
// fails no request and the retirement (reading only the serving leader) Succeeds; a group without
// room for all its members holds no GPUs, says InsufficientGPU, and starts whole once room appears.
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Kube } from "../../src/agent/kube.ts";
import { adminCaller, type AgentWorld, type Backend, E2E_BACKENDS, eventually, MODEL, startAgentWorld, startClients } from "./e2e-support.ts";

const NS = "berth-groups";
const H100 = "nvidia-h100-80gb" as const;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

describe.each<Backend>(E2E_BACKENDS)("multi-host instances as groups, on the %s cluster", (backend) => {
  let world: AgentWorld;
  let kube: Kube;
  const call = adminCaller(() => world.server);

  const spec = (replicas: number) => ({
    model: { name: MODEL },
    engine: { name: "vllm", image: "vllm/vllm-openai:v0.16.0" },
    router: { kind: "builtin", policy: "least_load" },
    roles: [{ name: "main", replicas, size: 2, resources: { gpus: 8, gpuType: H100 } }],
  });

  const podsOf = async (id: string, replica?: number) =>
    (
      await kube.core.listNamespacedPod({
        namespace: NS,
        labelSelector: `berth.dev/deployment-id=${id},berth.dev/role=main${replica === undefined ? "" : `,berth.dev/replica=${replica}`}`,
      })
    ).items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  const isReady = (pod: V1Pod) => !pod.metadata!.deletionTimestamp && pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
  const statusOf = async (id: string) => (await call("GET", `/v1/deployments/${id}`)).body.status;
  const conditionOf = (status: { conditions?: Condition[] }, type: string) => status?.conditions?.find((c) => c.type === type);

  /** The endpoints every Ready router pod holds: `id state`. */
  const routerEndpoints = async (id: string, name: string): Promise<string[][]> => {
    const secret = await kube.core.readNamespacedSecret({ name: `${name}-router-admin`, namespace: NS });
    const token = Buffer.from(secret.data!.token!, "base64").toString("utf8");
    const pods = await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/component=router` });
    return Promise.all(
      pods.items.filter(isReady).map(async (pod) => {
        const res = await fetch(`http://${pod.status!.podIP}:8080/admin/endpoints`, { headers: { Authorization: `Bearer ${token}` } });
        const body = (await res.json()) as { endpoints: Array<{ id: string; state: string }> };
        return body.endpoints.map((e) => `${e.id} ${e.state}`);
      }),
    );
  };

  const setReplicas = async (id: string, replicas: number) => {
    const current = await call("GET", `/v1/deployments/${id}`);
    const roles = current.body.spec.roles.map((role: object) => ({ ...role, replicas }));
    const patched = await call("PATCH", `/v1/deployments/${id}`, { spec: { roles } }, { "Content-Type": "application/merge-patch+json", "If-Match": current.etag! });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  };

  /**
   * Right after a fault: not Ready with the member named, and the leader withdrawn from every router
   * pod (both watched from the fault on, so a quick recreation cannot hide them); then recreated
   * whole and Ready.
   */
  const brokenThenRecreated = async (id: string, name: string, before: V1Pod[], reasons: RegExp, fault: () => Promise<void>) => {
    const leader = `${name}-main-r0-m0`;
    await fault();
    const withdrawn = eventually("the leader withdrawn from every router pod", async () => (await routerEndpoints(id, name)).every((list) => !list.includes(`${leader} eligible`)), 60_000, 100);
    withdrawn.catch(() => {}); // awaited below; a failure of `broken` first must not leave it unhandled
    const broken = await eventually(
      "status not Ready naming the member",
      async () => {
        const status = await statusOf(id);
        const rolesReady = conditionOf(status, "RolesReady");
        // The member is named: lost, failed, terminating, or (the group recreated) starting again.
        return status.phase !== "Ready" && reasons.test(rolesReady?.reason ?? "") && new RegExp(`\\(${name}-main-r0-m[01]\\)`).test(rolesReady!.message) ? status : undefined;
      },
      60_000,
      100,
    );
    expect(broken.roles[0]).toMatchObject({ ready: 0 });
    await withdrawn;
    // Recreated as a unit: both members are new pods, not only the lost one.
    const ready = await world.readyDeployment(id, { timeoutMs: 150_000, what: `${name} Ready again` });
    const after = await podsOf(id, 0);
    expect(after.map((p) => p.metadata!.name)).toEqual([leader, `${name}-main-r0-m1`]);
    for (const [i, pod] of after.entries()) expect(pod.metadata!.uid, pod.metadata!.name).not.toBe(before[i]!.metadata!.uid);
    expect(after.every(isReady)).toBe(true);
    expect(await routerEndpoints(id, name)).toEqual([[`${leader} eligible`]]);
    return ready;
  };

  beforeAll(async () => {
    world = await startAgentWorld({
      backend,
      project: "groups",
      nodes: ["a", "b", "c", "d"].map((n) => ({ name: `gpu-${n}`, gpuType: H100, gpus: 8 })),
    });
    kube = world.kube;
    world.startAgent({ retry: { attempts: 3, baseMs: 50, capMs: 200 } });
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  /** Deployments a test created: removed after it (pass or fail), so the next one finds every GPU free. */
  const created: string[] = [];
  const create = async (name: string, replicas: number) => {
    const id = await world.create(name, spec(replicas));
    created.push(id);
    return id;
  };
  afterEach(async () => {
    for (const id of created.splice(0)) {
      await call("DELETE", `/v1/deployments/${id}`);
      await eventually(`${id}'s pods gone`, async () => (await podsOf(id)).length === 0, 90_000);
    }
  }, 200_000);

  it("TP16 over two pods: Ready only with both members Ready, the follower headless; a lost follower withdraws the leader and the group is recreated whole", async () => {
    const id = await create("tp", 1);
    const ready = await world.readyDeployment(id, { timeoutMs: 120_000 });
    expect(ready.status.roles).toEqual([{ name: "main", kind: "server", desired: 1, ready: 1, updated: 1, draining: 0 }]);
    const pods = await podsOf(id, 0);
    expect(pods.map((p) => [p.metadata!.name, p.metadata!.labels!["berth.dev/serving"], isReady(p)])).toEqual([
      ["tp-main-r0-m0", "true", true],
      ["tp-main-r0-m1", "false", true],
    ]);
    // On two different nodes (8 GPUs each), the follower running vLLM's headless mode.
    expect(new Set(pods.map((p) => p.spec!.nodeName)).size).toBe(2);
    expect(pods[1]!.spec!.containers[0]!.args).toEqual(expect.arrayContaining(["--headless", "--nnodes", "2", "--node-rank", "1"]));
    expect(await routerEndpoints(id, "tp")).toEqual([["tp-main-r0-m0 eligible"]]);
    // The follower is Ready (it has no probe, as rendered) yet answers no HTTP: vLLM --headless.
    await expect(fetch(`http://${pods[1]!.status!.podIP}:8000/v1/models`, { signal: AbortSignal.timeout(10_000) })).rejects.toThrow();

    // The follower's process dies (the kubelet restarts the container: the collective is gone).
    const pid = Number(pods[1]!.status!.containerStatuses![0]!.containerID!.replace("berth-sim://", ""));
    expect(Number.isInteger(pid) && pid > 0).toBe(true);
    const again = await brokenThenRecreated(id, "tp", pods, /^(MemberFailed|MemberTerminating|MemberMissing|WeightsLoading)$/, async () => {
      process.kill(pid, "SIGKILL");
    });

    // The follower's pod deleted behind the agent's back.
    const current = await podsOf(id, 0);
    await brokenThenRecreated(id, "tp", current, /^(MemberTerminating|MemberMissing|WeightsLoading)$/, async () => {
      await kube.core.deleteNamespacedPod({ name: "tp-main-r0-m1", namespace: NS, gracePeriodSeconds: 0 });
    });
    expect(again.status.endpoint).toBeDefined();
  }, 420_000);

  it("1 → 2 → 1 under streaming load: no request fails and the retirement of the group Succeeds", async () => {
    const id = await create("scale", 1);
    const ready = await world.readyDeployment(id, { timeoutMs: 120_000 });
    const clients = startClients(ready.status.endpoint, 4, 100);
    await eventually("requests completing", async () => clients.results.ok >= 4);

    await setReplicas(id, 2);
    await world.readyDeployment(id, { timeoutMs: 120_000, check: (d) => d.status.roles[0].desired === 2 && d.status.roles[0].ready === 2, what: "scale Ready at 2" });
    expect(await routerEndpoints(id, "scale")).toEqual([["scale-main-r0-m0 eligible", "scale-main-r1-m0 eligible"]]);
    const r1 = await podsOf(id, 1);
    expect(r1).toHaveLength(2);
    const before = clients.results.ok;
    await eventually("requests completing at 2", async () => clients.results.ok >= before + 4);

    await setReplicas(id, 1);
    const op = await eventually(
      "the retirement of r1 Succeeded",
      async () => {
        const res = await call("GET", `/v1/operations?deploymentId=${id}&kind=retire`);
        const found = (res.body.items as Array<{ id: string; replica: number; phase: string }>).find((o) => o.replica === 1);
        if (found && found.phase !== "Running" && found.phase !== "Pending" && found.phase !== "Succeeded") throw new Error(`retirement ${found.phase}: ${JSON.stringify(found)}`);
        return found?.phase === "Succeeded" ? found : undefined;
      },
      150_000,
    );
    const results = await clients.stop();
    const full = (await call("GET", `/v1/operations/${op.id}`)).body;
    expect(full.steps.map((s: { name: string }) => s.name)).toEqual(["Withdrawing", "Draining", "Deleting", "Settling"]);
    // Both members were retired; the headless follower was never read (it serves no HTTP).
    expect([...full.params.podUids].sort()).toEqual(r1.map((p) => p.metadata!.uid).sort());
    expect(await podsOf(id, 1)).toEqual([]);
    expect(results.failed).toEqual([]);
    expect(results.ok).toBeGreaterThan(8);
    const after = await world.readyDeployment(id, { timeoutMs: 60_000, check: (d) => d.status.roles[0].desired === 1 && d.status.roles[0].draining === 0 });
    expect(after.status.roles).toEqual([{ name: "main", kind: "server", desired: 1, ready: 1, updated: 1, draining: 0 }]);
  }, 420_000);

  it("all or nothing: a group without room for all its members holds no GPUs and says InsufficientGPU, then starts whole once room appears", async () => {
    const holder = await create("holder", 1);
    await world.readyDeployment(holder, { timeoutMs: 120_000 });
    // 16 of 32 GPUs left: room for one more group of two, not two.
    const id = await create("pair", 2);
    let last: unknown;
    const held = await eventually(
      () => `pair r1 held with InsufficientGPU; last status ${JSON.stringify(last)}`,
      async () => {
        const status = (last = await statusOf(id));
        const scheduled = conditionOf(status, "Scheduled");
        return scheduled?.reason === "InsufficientGPU" && status.roles?.[0]?.ready === 1 ? status : undefined;
      },
      120_000,
    );
    expect(conditionOf(held, "Scheduled")!.message).toBe(
      `pair-main-r1 needs 16 ${H100} GPUs (2 × 8) placed together; 0 free: the group holds no GPUs until they are`,
    );
    expect(conditionOf(held, "Ready")).toMatchObject({ status: "False", reason: "InsufficientGPU" });
    // Held, not half-placed: r1 has no pod at all, r0 serves.
    expect(await podsOf(id, 1)).toEqual([]);
    expect((await podsOf(id, 0)).every(isReady)).toBe(true);

    await call("DELETE", `/v1/deployments/${holder}`);
    created.splice(created.indexOf(holder), 1);
    const ready = await world.readyDeployment(id, { timeoutMs: 150_000, check: (d) => d.status.roles[0].ready === 2, what: "pair Ready at 2 once holder's GPUs are free" });
    expect(conditionOf(ready.status, "Scheduled")).toMatchObject({ status: "True" });
    expect((await podsOf(id, 1)).map((p) => [p.metadata!.name, isReady(p)])).toEqual([
      ["pair-main-r1-m0", true],
      ["pair-main-r1-m1", true],
    ]);
  }, 420_000);
});
