// The smaller hardening items (docs/design.md §14.7), through the API: the /metrics token, the
// autoscaler's replicas held to the scaling bounds, bounded agent event data, prototype keys in
// merge patches, https webhook URLs, cluster listings scoped to a project, reserved project names.
import { prometheus } from "@hono/prometheus";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

const PROBLEM = "https://berth.dev/problems/";
const METRICS_TOKEN = "metrics-token-0123456789abcdef";

function promMetrics() {
  const { printMetrics, registerMetrics } = prometheus({ registry: new Registry(), prefix: "berth_api_" });
  return { middleware: registerMetrics, handler: printMetrics };
}

describe("/metrics", () => {
  let guarded: TestApi;
  let open: TestApi;
  beforeAll(async () => {
    guarded = await createTestApi("pglite", { metricsToken: METRICS_TOKEN }, { metrics: promMetrics() });
    open = await createTestApi("pglite", {}, { metrics: promMetrics() });
  });
  afterAll(async () => {
    await guarded?.close();
    await open?.close();
  });

  it("needs the metrics token as a bearer token when BERTH_METRICS_TOKEN is set", async () => {
    await guarded.call("GET", "/healthz", { token: null });
    for (const token of [null, "wrong-token-0123456789abcdef", `${METRICS_TOKEN}x`]) {
      const res = await guarded.call("GET", "/metrics", { token });
      expect(res.status, String(token)).toBe(401);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="berth"');
      expect(res.body).toMatchObject({ type: `${PROBLEM}unauthorized`, status: 401, detail: expect.stringContaining("BERTH_METRICS_TOKEN") });
    }
    // An API key, even the installation admin's, is not the metrics token.
    expect((await guarded.call("GET", "/metrics")).status).toBe(401);
    const ok = await guarded.call("GET", "/metrics", { token: METRICS_TOKEN });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain("berth_api_http_request_duration_seconds");
  });

  it("stays open without a token configured", async () => {
    const res = await open.call("GET", "/metrics", { token: null });
    expect(res.status).toBe(200);
    expect(res.body).toContain("berth_api_");
  });
});

describe("hardening on pglite", () => {
  let api: TestApi;
  let agent: { token: string; clusterId: string };
  let team: string;
  beforeAll(async () => {
    api = await createTestApi("pglite");
    agent = await api.createAgent("hardening-main");
    team = await api.createProject("hardening-team");
  });
  afterAll(async () => {
    await api?.close();
  });

  const asAgent = (method: string, path: string, body?: unknown) => api.call(method, path, { token: agent.token, body });
  const create = async (name: string, spec: Record<string, unknown> = {}) => {
    const res = await api.call("POST", "/v1/deployments", {
      body: deploymentBody(name, { projectId: team, spec: { ...deploymentBody(name).spec, clusterId: agent.clusterId, ...spec } }),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string; resourceVersion: number; spec: { roles: Array<Record<string, unknown>> } };
  };

  describe("the autoscaler's replicas PATCH", () => {
    it("is clamped to the role's scaling bounds, with a warning and a deployment.scaled naming the bound", async () => {
      const dep = await create("clamped", {
        roles: [{ name: "main", replicas: 2, resources: { gpus: 1 } }],
        scaling: { mode: "active", roles: [{ name: "main", minReplicas: 1, maxReplicas: 4 }] },
      });
      const role = dep.spec.roles[0]!;
      const high = await asAgent("PATCH", `/v1/deployments/${dep.id}`, { spec: { roles: [{ ...role, replicas: 9 }] } });
      expect(high.status).toBe(200);
      expect(high.body.spec.roles[0].replicas).toBe(4);
      expect(high.body.warnings).toEqual(["role main: replicas 9 is outside spec.scaling's bounds; set to maxReplicas 4"]);
      expect(high.headers.get("warning")).toContain("set to maxReplicas 4");
      const low = await asAgent("PATCH", `/v1/deployments/${dep.id}`, { spec: { roles: [{ ...role, replicas: 0 }] } });
      expect(low.body.spec.roles[0].replicas).toBe(1);
      const history = (await api.call("GET", `/v1/deployments/${dep.id}/scaling-events`)).body.items;
      expect(history.map((e: { data: object }) => e.data)).toEqual([
        expect.objectContaining({ from: 4, to: 1, mode: "active", reason: "MinReplicas", message: expect.stringContaining("replicas 0") }),
        expect.objectContaining({ from: 2, to: 4, mode: "active", reason: "MaxReplicas", message: expect.stringContaining("replicas 9") }),
      ]);
      // A user's write is the user's to make: no clamp.
      const byUser = await api.call("PATCH", `/v1/deployments/${dep.id}`, { body: { spec: { roles: [{ ...role, replicas: 6 }] } } });
      expect(byUser.status).toBe(200);
      expect(byUser.body.spec.roles[0].replicas).toBe(6);
    });
  });

  describe("agent event data", () => {
    const countEvents = async (id: string) =>
      (await api.call("GET", `/v1/events?deploymentId=${id}&type=replica.retiring&limit=200`)).body.items.length;

    it("is refused above 16 KiB (413), too deep or with prototype keys (400), naming /data, and nothing is recorded", async () => {
      const dep = await create("eventful");
      const big = await asAgent("POST", "/v1/agent/events", { type: "replica.retiring", deploymentId: dep.id, data: { note: "x".repeat(17 * 1024) } });
      expect(big.status).toBe(413);
      expect(big.body).toMatchObject({ type: `${PROBLEM}payload-too-large`, limit: 16384, errors: [{ pointer: "/data", message: expect.stringContaining("16384 bytes") }] });
      let deep: unknown = 1;
      for (let i = 0; i < 12; i++) deep = { d: deep };
      const nested = await asAgent("POST", "/v1/agent/events", { type: "replica.retiring", deploymentId: dep.id, data: deep });
      expect(nested.status).toBe(400);
      expect(nested.body.errors).toEqual([{ pointer: "/data/d/d/d/d/d/d/d/d", message: expect.stringContaining("more than 8 levels") }]);
      const proto = await api.call("POST", "/v1/agent/events", {
        token: agent.token,
        headers: { "Content-Type": "application/json" },
        rawBody: `{"type":"replica.retiring","deploymentId":"${dep.id}","data":{"replica":{"__proto__":{"polluted":true}}}}`,
      });
      expect(proto.status).toBe(400);
      expect(proto.body.errors).toEqual([{ pointer: "/data/replica/__proto__", message: expect.stringContaining("not allowed") }]);
      expect(await countEvents(dep.id)).toBe(0);
      const fine = await asAgent("POST", "/v1/agent/events", { type: "replica.retiring", deploymentId: dep.id, data: { note: "x".repeat(15 * 1024) } });
      expect(fine.status).toBe(202);
      expect(await countEvents(dep.id)).toBe(1);
    });
  });

  describe("merge patches", () => {
    let patched = 0;
    it.each([
      ['{"spec":{"model":{"__proto__":{"name":"evil/model"}}}}', "/spec/model/__proto__"],
      ['{"spec":{"engine":{"constructor":{"prototype":{"x":1}}}}}', "/spec/engine/constructor"],
      ['{"labels":{"constructor":"x"}}', "/labels/constructor"],
    ])("refuse %s with 400 at %s and change nothing", async (rawBody, pointer) => {
      const dep = await create(`patched-${++patched}`);
      const res = await api.call("PATCH", `/v1/deployments/${dep.id}`, { rawBody, headers: { "Content-Type": "application/merge-patch+json" } });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ pointer, message: expect.stringContaining("is not allowed as a key in a merge patch") }]);
      expect((await api.call("GET", `/v1/deployments/${dep.id}`)).body.resourceVersion).toBe(dep.resourceVersion);
    });
  });

  describe("webhook URLs", () => {
    it("need https unless the installation allows http", async () => {
      const res = await api.call("POST", "/v1/webhooks", { body: { url: "http://hooks.example.com/berth", eventTypes: ["*"], projectId: team } });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ pointer: "/url", message: expect.stringMatching(/https is required.*BERTH_WEBHOOK_ALLOW_HTTP=true/) }]);
      const secure = await api.call("POST", "/v1/webhooks", { body: { url: "https://hooks.example.com/berth", eventTypes: ["*"], projectId: team } });
      expect(secure.status).toBe(201);
      const allowing = await createTestApi("pglite", { webhooks: { ...DEFAULT_APP_CONFIG.webhooks, allowHttp: true } });
      try {
        const plain = await allowing.call("POST", "/v1/webhooks", { body: { url: "http://hooks.example.com/berth", eventTypes: ["*"] } });
        expect(plain.status).toBe(201);
      } finally {
        await allowing.close();
      }
    });
  });

  describe("reserved project names", () => {
    it.each([
      ["system", /namespace berth-system is where berth's agent runs.*"system-team"/],
      ["api", /namespace berth-api is where berth's api runs.*"api-team"/],
      ["default", /first project.*"default-team"/],
      ["kube-public", /Kubernetes.*"public"/],
      ["kube", /Kubernetes.*"cluster-team"/],
    ])("refuses %s with 422 at /name", async (name, message) => {
      const res = await api.call("POST", "/v1/projects", { body: { name } });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ pointer: "/name", message: expect.stringMatching(message) }]);
      const names = (await api.call("GET", "/v1/projects?limit=200")).body.items.map((p: { name: string }) => p.name);
      expect(names.filter((n: string) => n === name)).toHaveLength(name === "default" ? 1 : 0);
    });
  });
});

describe.each(["pglite", "postgres"] as const)("cluster listings on %s", (driver) => {
  let api: TestApi;
  let used: { clusterId: string };
  let unused: { clusterId: string };
  let viewer: string;
  let bystander: string;
  beforeAll(async () => {
    api = await createTestApi(driver);
    used = await api.createAgent("used-by-team");
    unused = await api.createAgent("others-only");
    const team = await api.createProject("clusters-team");
    const body = deploymentBody("on-used", { projectId: team, spec: { ...deploymentBody("x").spec, clusterId: used.clusterId } });
    expect((await api.call("POST", "/v1/deployments", { body })).status).toBe(201);
    viewer = await api.createKey("viewer", team);
    bystander = await api.createKey("admin", await api.createProject("clusters-none"));
  });
  afterAll(async () => {
    await api?.close();
  });

  const ids = async (token?: string) => (await api.call("GET", "/v1/clusters", { token })).body.items.map((c: { id: string }) => c.id);

  it("show a project-bound key only the clusters its project's deployments run on; others are 404", async () => {
    expect((await ids()).sort()).toEqual([used.clusterId, unused.clusterId].sort()); // same createdAt on the test clock: id order
    expect(await ids(viewer)).toEqual([used.clusterId]);
    expect(await ids(bystander)).toEqual([]);
    expect((await api.call("GET", `/v1/clusters/${used.clusterId}`, { token: viewer })).status).toBe(200);
    const hidden = await api.call("GET", `/v1/clusters/${unused.clusterId}`, { token: viewer });
    expect(hidden.status).toBe(404);
    expect(hidden.body.detail).toBe((await api.call("GET", "/v1/clusters/clu_00000000000000000000", { token: viewer })).body.detail.replace("clu_00000000000000000000", unused.clusterId));
    expect((await api.call("GET", `/v1/clusters/${unused.clusterId}`)).status).toBe(200);
    const page = await api.call("GET", "/v1/clusters?limit=1", { token: viewer });
    expect(page.body).toMatchObject({ items: [{ id: used.clusterId }], nextCursor: null });
  });
});
