// The agent with the builtin router, end to end: a real `berth serve`, a simulated cluster, the
// agent in-process. An aggregated deployment is served through the router (status.endpoint is
// the router Service), the router holds both engine pods; vLLM and SGLang PD deployments answer
// through the router's two-leg exchange; a scale-down pushes the leaving pod as draining before
// its delete is issued; deleting removes every object, router objects and token Secret included.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent, Logger } from "../../src/agent/agent.ts";
import { createKube, type Kube } from "../../src/agent/kube.ts";
import { adminCaller, type AgentWorld, type Backend, E2E_BACKENDS, answerOf, chat as complete, eventually, MODEL, quiet, startAgentWorld } from "./e2e-support.ts";

const NS = "berth-routers";

interface RouterView {
  endpoints: Array<{ id: string; url: string; role: string; state: string; bootstrapPort?: number; inFlight: number }>;
  models: string[];
}

describe.each<Backend>(E2E_BACKENDS)("berth agent with the builtin router against the %s cluster", (backend) => {
  let world: AgentWorld;
  let kube: Kube;
  let agent: Agent;
  let startAgent: (logger?: Logger) => void;
  let projectId: string;
  /** Each pod delete the agent issues, with what the router said about that pod just before. */
  const deletes: Array<{ pod: string; routerState: string | undefined }> = [];
  let watchDeletesOf: string | undefined;

  const call = adminCaller(() => world.server);

  /** GET /admin/endpoints on the deployment's Ready router pod, with the token from its Secret. */
  const routerView = async (id: string, name: string): Promise<RouterView> => {
    const secret = await kube.core.readNamespacedSecret({ name: `${name}-router-admin`, namespace: NS });
    const token = Buffer.from(secret.data!.token!, "base64").toString("utf8");
    const pods = await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/component=router` });
    const pod = pods.items.find((p) => !p.metadata!.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    if (!pod) throw new Error("no Ready router pod");
    const unauthorized = await fetch(`http://${pod.status!.podIP}:8080/admin/endpoints`);
    expect(unauthorized.status).toBe(401);
    await unauthorized.body?.cancel();
    const res = await fetch(`http://${pod.status!.podIP}:8080/admin/endpoints`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as RouterView;
  };

  const chat = async (endpoint: string, content = "hello") => {
    const res = await complete(endpoint, { content });
    expect(res.status, res.text).toBe(200);
    expect(answerOf(res.text).length).toBeGreaterThan(0);
  };

  /** The sum of a metric's samples on an engine pod whose lines contain `match`. */
  const engineMetric = async (podName: string, port: number, name: string, match = "") => {
    const pod = await kube.core.readNamespacedPod({ name: podName, namespace: NS });
    const text = await (await fetch(`http://${pod.status!.podIP}:${port}/metrics`)).text();
    return text
      .split("\n")
      .filter((line) => (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) && line.includes(match))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  };

  const create = async (name: string, spec: object) => {
    const created = await call("POST", "/v1/deployments", { name, projectId, spec });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  };

  const readyDeployment = (id: string) => world.readyDeployment(id);

  beforeAll(async () => {
    world = await startAgentWorld({ backend, project: "routers" });
    kube = world.kube;
    projectId = world.projectId;
    // The agent's own client, with every pod delete recorded together with what the router held
    // for that pod at that moment: the order of calls shows drain-before-delete.
    const agentKube = createKube(world.kubeConfig);
    const deletePod = agentKube.core.deleteNamespacedPod.bind(agentKube.core);
    agentKube.core.deleteNamespacedPod = async (param, options) => {
      if (watchDeletesOf) {
        const view = await routerView(watchDeletesOf, "chat").catch(() => undefined);
        deletes.push({ pod: param.name, routerState: view?.endpoints.find((e) => e.id === param.name)?.state });
      }
      return deletePod(param, options);
    };
    startAgent = (logger = quiet) => {
      agent = world.startAgent({ kube: agentKube, logger });
    };
    startAgent();
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  let chatId: string;

  it("serves an aggregated deployment through the router, which holds both engine pods", async () => {
    chatId = await create("chat", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin", policy: "least_load" },
      roles: [{ name: "main", replicas: 2, resources: { gpus: 1 } }],
    });
    const ready = await readyDeployment(chatId);
    expect(ready.status.roles).toEqual([{ name: "main", kind: "server", desired: 2, ready: 2, updated: 2, draining: 0 }]);
    const routerService = await kube.core.readNamespacedService({ name: "chat", namespace: NS });
    expect(ready.status.endpoint).toBe(`http://${routerService.spec!.clusterIP}:8080`);
    expect(ready.status.conditions.find((c: { type: string }) => c.type === "RouterReady")).toMatchObject({ status: "True" });
    await chat(ready.status.endpoint);

    const view = await routerView(chatId, "chat");
    const pods = await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${chatId},berth.dev/role=main` });
    expect(view.endpoints.map(({ id, url, role, state }) => ({ id, url, role, state }))).toEqual(
      pods.items
        .map((p) => ({ id: p.metadata!.name!, url: `http://${p.status!.podIP}:8000`, role: "server", state: "eligible" }))
        .sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect(view.models).toEqual([MODEL]);

    // Every router object the renderer gives exists; the token Secret carries the agent's labels.
    const selector = `berth.dev/deployment-id=${chatId}`;
    expect((await kube.apps.listNamespacedDeployment({ namespace: NS, labelSelector: selector })).items.map((d) => d.metadata!.name)).toEqual(["chat-router"]);
    expect((await kube.core.listNamespacedConfigMap({ namespace: NS, labelSelector: selector })).items.map((c) => c.metadata!.name)).toEqual(["chat-router"]);
    expect((await kube.core.listNamespacedSecret({ namespace: NS, labelSelector: selector })).items.map((s) => s.metadata!.name)).toEqual(["chat-router-admin"]);
  }, 90_000);

  it("serves a vLLM prefill/decode deployment through the router's two-leg exchange", async () => {
    const id = await create("pd", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin" },
      roles: [
        { name: "prefill", kind: "prefill", replicas: 1, resources: { gpus: 1 } },
        { name: "decode", kind: "decode", replicas: 1, resources: { gpus: 1 } },
      ],
    });
    const ready = await readyDeployment(id);
    expect(ready.status.roles).toEqual([
      { name: "prefill", kind: "prefill", desired: 1, ready: 1, updated: 1, draining: 0 },
      { name: "decode", kind: "decode", desired: 1, ready: 1, updated: 1, draining: 0 },
    ]);
    const routerService = await kube.core.readNamespacedService({ name: "pd", namespace: NS });
    expect(ready.status.endpoint).toBe(`http://${routerService.spec!.clusterIP}:8080`);
    await chat(ready.status.endpoint, "tell me about disaggregated serving");
    // Both legs ran: the prefill answered one request, the decode took its prompt's KV from it.
    expect(await engineMetric("pd-prefill-r0-m0", 8000, "vllm:request_success_total")).toBeGreaterThanOrEqual(1);
    expect(await engineMetric("pd-decode-r0-m0", 8000, "vllm:prompt_tokens_by_source_total", 'source="external_kv_transfer"')).toBeGreaterThan(0);
    const view = await routerView(id, "pd");
    expect(view.endpoints.map(({ id, role, state }) => ({ id, role, state }))).toEqual([
      { id: "pd-decode-r0-m0", role: "decode", state: "eligible" },
      { id: "pd-prefill-r0-m0", role: "prefill", state: "eligible" },
    ]);
  }, 90_000);

  it("serves an SGLang prefill/decode deployment (prefill endpoints carry the bootstrap port)", async () => {
    const id = await create("sgl", {
      model: { name: MODEL },
      engine: { name: "sglang", image: "lmsysorg/sglang:v0.5.4" },
      router: { kind: "builtin" },
      roles: [
        { name: "prefill", kind: "prefill", replicas: 1, resources: { gpus: 1 } },
        { name: "decode", kind: "decode", replicas: 1, resources: { gpus: 1 } },
      ],
    });
    const ready = await readyDeployment(id);
    await chat(ready.status.endpoint, "and with sglang");
    // Both servers got the request (SGLang style: at once), and the decode found the prefill's KV.
    expect(await engineMetric("sgl-prefill-r0-m0", 30000, "sglang:num_requests_total")).toBeGreaterThanOrEqual(1);
    expect(await engineMetric("sgl-decode-r0-m0", 30000, "sglang:num_requests_total")).toBeGreaterThanOrEqual(1);
    expect(await engineMetric("sgl-decode-r0-m0", 30000, "sglang:num_bootstrap_failed_reqs_total")).toBe(0);
    const view = await routerView(id, "sgl");
    expect(view.endpoints.map(({ id, role, bootstrapPort }) => ({ id, role, bootstrapPort }))).toEqual([
      { id: "sgl-decode-r0-m0", role: "decode", bootstrapPort: undefined },
      { id: "sgl-prefill-r0-m0", role: "prefill", bootstrapPort: 8998 },
    ]);
  }, 90_000);

  it("scales 2 → 1: the leaving pod is draining in the router before its delete is issued, then leaves the list", async () => {
    watchDeletesOf = chatId;
    try {
      const current = await call("GET", `/v1/deployments/${chatId}`);
      const patched = await call(
        "PATCH",
        `/v1/deployments/${chatId}`,
        { spec: { roles: current.body.spec.roles.map((role: object) => ({ ...role, replicas: 1 })) } },
        { "Content-Type": "application/merge-patch+json", "If-Match": current.etag! },
      );
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      const view = await eventually("the router holding only r0", async () => {
        const res = await call("GET", `/v1/deployments/${chatId}`);
        const v = await routerView(chatId, "chat");
        return res.body.status?.phase === "Ready" && res.body.status.roles[0].desired === 1 && v.endpoints.length === 1 ? v : undefined;
      });
      expect(view.endpoints.map(({ id, state }) => ({ id, state }))).toEqual([{ id: "chat-main-r0-m0", state: "eligible" }]);
      expect(deletes.filter((d) => d.pod === "chat-main-r1-m0")).toEqual([{ pod: "chat-main-r1-m0", routerState: "draining" }]);
      await chat((await call("GET", `/v1/deployments/${chatId}`)).body.status.endpoint);
    } finally {
      watchDeletesOf = undefined;
    }
  }, 90_000);

  it("a restarted agent keeps the router's token (read back from the Secret) and pushes to the router again", async () => {
    const before = await kube.core.readNamespacedSecret({ name: "chat-router-admin", namespace: NS });
    await agent.stop();
    // No memory of what the router acknowledged: it must push again, with the stored token.
    const pushes: object[] = [];
    startAgent({ ...quiet, info: (msg: string, data?: object) => void (msg === "router endpoints pushed" && pushes.push(data ?? {})) });
    await eventually("the new agent's push", async () => pushes.some((p) => (p as { deploymentId?: string }).deploymentId === chatId));
    const after = await kube.core.readNamespacedSecret({ name: "chat-router-admin", namespace: NS });
    expect(after.metadata!.uid).toBe(before.metadata!.uid);
    expect(after.data).toEqual(before.data);
    const res = await call("GET", `/v1/deployments/${chatId}`);
    expect(res.body.status.phase).toBe("Ready");
    expect(res.body.status.conditions.find((c: { type: string }) => c.type === "RouterReady")).toMatchObject({ status: "True" });
    await chat(res.body.status.endpoint);
  }, 60_000);

  it("deletes every object of a routed deployment, router objects and token Secret included, then the record", async () => {
    const deleted = await call("DELETE", `/v1/deployments/${chatId}`);
    expect([200, 202, 204]).toContain(deleted.status);
    await eventually("the record gone", async () => (await call("GET", `/v1/deployments/${chatId}`)).status === 404);
    const q = { namespace: NS, labelSelector: `berth.dev/deployment-id=${chatId}` };
    const left = await Promise.all([
      kube.core.listNamespacedPod(q),
      kube.core.listNamespacedService(q),
      kube.apps.listNamespacedDeployment(q),
      kube.core.listNamespacedConfigMap(q),
      kube.core.listNamespacedSecret(q),
      kube.core.listNamespacedServiceAccount(q),
      kube.rbac.listNamespacedRole(q),
      kube.rbac.listNamespacedRoleBinding(q),
    ]);
    expect(left.map((list) => list.items.map((o) => o.metadata!.name))).toEqual([[], [], [], [], [], [], [], []]);
  }, 90_000);
});
