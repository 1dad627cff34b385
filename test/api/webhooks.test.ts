// /v1/webhooks routes: create/read/update/delete, secrets shown once, who may do what,
// project scope, validation (400 for unknown event types, 422 for refused URLs), ETags.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import type { WebhookTransport } from "../../src/services/webhooks/transport.ts";
import { createTestApi, type TestApi } from "../support/api-harness.ts";
import { DRIVERS } from "../support/databases.ts";

const HOOK = "https://hooks.example.com/berth";

/** Never touches the network: names resolve to a public documentation-free address, every POST "succeeds". */
const offlineTransport: WebhookTransport = {
  resolve: async () => ["93.184.216.34"],
  send: async () => ({ status: 204, headers: {}, bodySnippet: "", latencyMs: 1 }),
};

describe.each(DRIVERS)("webhook endpoints on %s", (driver) => {
  let api: TestApi;
  let teamA: string;
  let teamB: string;
  let adminA: string;
  let editorA: string;
  let viewerA: string;
  let installationEditor: string;

  beforeAll(async () => {
    // The default guard (no private addresses).
    api = await createTestApi(driver, { webhooks: { ...DEFAULT_APP_CONFIG.webhooks } }, { webhookTransport: offlineTransport });
    teamA = await api.createProject("hooks-a");
    teamB = await api.createProject("hooks-b");
    adminA = await api.createKey("admin", teamA);
    editorA = await api.createKey("editor", teamA);
    viewerA = await api.createKey("viewer", teamA);
    installationEditor = await api.createKey("editor");
  });
  afterAll(async () => {
    await api?.close();
  });

  it("creates an endpoint with defaults, shows the secret once, and never again", async () => {
    const created = await api.call("POST", "/v1/webhooks", {
      token: adminA,
      body: { url: HOOK, eventTypes: ["deployment.ready", "deployment.failed"] },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toBe(`/v1/webhooks/${created.body.id}`);
    expect(created.headers.get("etag")).toBe(`"${created.body.resourceVersion}"`);
    expect(created.body).toMatchObject({
      projectId: teamA,
      url: HOOK,
      eventTypes: ["deployment.ready", "deployment.failed"],
      description: "",
      enabled: true,
    });
    expect(created.body.id).toMatch(/^whk_[0-9a-z]{20}$/);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const read = await api.call("GET", `/v1/webhooks/${created.body.id}`, { token: viewerA });
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty("secret");
    expect(read.body).toEqual({ ...created.body, secret: undefined });
    const listed = await api.call("GET", "/v1/webhooks", { token: viewerA });
    expect(listed.body.items.map((w: { id: string }) => w.id)).toContain(created.body.id);
    expect(JSON.stringify(listed.body)).not.toContain("whsec_");
  });

  it("lets an installation admin create an installation-wide endpoint, and project endpoints by projectId", async () => {
    const wide = await api.call("POST", "/v1/webhooks", { body: { url: HOOK, eventTypes: ["*"], description: "all of it" } });
    expect(wide.status).toBe(201);
    expect(wide.body).not.toHaveProperty("projectId");
    expect(wide.body.eventTypes).toEqual(["*"]);
    const forB = await api.call("POST", "/v1/webhooks", { body: { projectId: teamB, url: HOOK, eventTypes: ["*"] } });
    expect(forB.status).toBe(201);
    expect(forB.body.projectId).toBe(teamB);
    const noSuchProject = await api.call("POST", "/v1/webhooks", { body: { projectId: "prj_nope", url: HOOK, eventTypes: ["*"] } });
    expect(noSuchProject.status).toBe(422);
    expect(noSuchProject.body.errors).toEqual([expect.objectContaining({ pointer: "/projectId" })]);
  });

  it("keeps project keys inside their project", async () => {
    const wide = await api.call("POST", "/v1/webhooks", { body: { url: HOOK, eventTypes: ["*"] } });
    const inB = await api.call("POST", "/v1/webhooks", { body: { projectId: teamB, url: HOOK, eventTypes: ["*"] } });
    for (const id of [wide.body.id, inB.body.id]) {
      expect((await api.call("GET", `/v1/webhooks/${id}`, { token: adminA })).status).toBe(404);
      expect((await api.call("PATCH", `/v1/webhooks/${id}`, { token: adminA, body: { description: "x" } })).status).toBe(404);
      expect((await api.call("DELETE", `/v1/webhooks/${id}`, { token: adminA })).status).toBe(404);
      expect((await api.call("POST", `/v1/webhooks/${id}/rotate-secret`, { token: adminA })).status).toBe(404);
      expect((await api.call("POST", `/v1/webhooks/${id}/test`, { token: adminA })).status).toBe(404);
      expect((await api.call("GET", `/v1/webhooks/${id}/deliveries`, { token: adminA })).status).toBe(404);
    }
    const listed = await api.call("GET", "/v1/webhooks?limit=200", { token: viewerA });
    expect(listed.body.items.length).toBeGreaterThan(0);
    expect(listed.body.items.every((w: { projectId?: string }) => w.projectId === teamA)).toBe(true);
    const elsewhere = await api.call("POST", "/v1/webhooks", { token: adminA, body: { projectId: teamB, url: HOOK, eventTypes: ["*"] } });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.detail).toContain(teamA);
    const byFilter = await api.call("GET", `/v1/webhooks?projectId=${teamB}&limit=200`);
    expect(byFilter.body.items.length).toBeGreaterThan(0);
    expect(byFilter.body.items.every((w: { projectId?: string }) => w.projectId === teamB)).toBe(true);
  });

  it("needs an admin key to manage endpoints; viewers read", async () => {
    for (const token of [editorA, viewerA, installationEditor]) {
      const res = await api.call("POST", "/v1/webhooks", { token, body: { url: HOOK, eventTypes: ["*"] } });
      expect(res.status).toBe(403);
      expect(res.body.detail).toContain('role "admin"');
    }
    const created = await api.call("POST", "/v1/webhooks", { token: adminA, body: { url: HOOK, eventTypes: ["*"] } });
    const id = created.body.id;
    expect((await api.call("PATCH", `/v1/webhooks/${id}`, { token: editorA, body: { enabled: false } })).status).toBe(403);
    expect((await api.call("DELETE", `/v1/webhooks/${id}`, { token: editorA })).status).toBe(403);
    expect((await api.call("POST", `/v1/webhooks/${id}/rotate-secret`, { token: viewerA })).status).toBe(403);
    expect((await api.call("POST", `/v1/webhooks/${id}/test`, { token: editorA })).status).toBe(403);
    expect((await api.call("GET", `/v1/webhooks/${id}/deliveries`, { token: viewerA })).status).toBe(200);
    expect((await api.call("GET", "/v1/webhooks", { token: null })).status).toBe(401);
    const agent = await api.createAgent(`hooks-${driver}`);
    expect((await api.call("GET", "/v1/webhooks", { token: agent.token })).status).toBe(403);
  });

  it("refuses unknown event types with 400 and a pointer to each", async () => {
    const res = await api.call("POST", "/v1/webhooks", {
      token: adminA,
      body: { url: HOOK, eventTypes: ["deployment.ready", "deployment.exploded", "webhook.test"] },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(["/eventTypes/1", "/eventTypes/2"]);
    expect(res.body.errors[0].message).toContain('must be one of "deployment.created"');
    expect(res.body.errors[0].message).not.toContain("webhook.test");
    for (const body of [{ url: HOOK }, { eventTypes: ["*"] }, { url: HOOK, eventTypes: [] }, { url: HOOK, eventTypes: ["*"], colour: "red" }]) {
      expect((await api.call("POST", "/v1/webhooks", { token: adminA, body })).status).toBe(400);
    }
  });

  it("refuses URLs the SSRF guard refuses with 422 at /url", async () => {
    for (const url of [
      "http://127.0.0.1:8080/hook",
      "http://localhost/hook",
      "http://169.254.169.254/latest/meta-data",
      "http://metadata.google.internal/computeMetadata/v1/",
      "http://[::ffff:10.0.0.1]/",
      "http://0x7f.1/",
      "http://2130706433/",
      "ftp://hooks.example.com/",
      "https://user:pass@hooks.example.com/",
      "not a url",
    ]) {
      const res = await api.call("POST", "/v1/webhooks", { token: adminA, body: { url, eventTypes: ["*"] } });
      expect(res.status, url).toBe(422);
      expect(res.body.errors, url).toEqual([expect.objectContaining({ pointer: "/url" })]);
    }
  });

  it("patches with If-Match, re-checks the URL, and records who disabled it", async () => {
    const created = await api.call("POST", "/v1/webhooks", { token: adminA, body: { url: HOOK, eventTypes: ["*"] } });
    const id = created.body.id;
    const stale = `"${created.body.resourceVersion}"`;
    const patched = await api.call("PATCH", `/v1/webhooks/${id}`, {
      token: adminA,
      headers: { "If-Match": stale, "Content-Type": "application/merge-patch+json" },
      body: { description: "ops pager", eventTypes: ["deployment.failed"], enabled: false },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ description: "ops pager", eventTypes: ["deployment.failed"], enabled: false, disabledReason: "user" });
    expect(patched.headers.get("etag")).toBe(`"${patched.body.resourceVersion}"`);
    const conflict = await api.call("PATCH", `/v1/webhooks/${id}`, { token: adminA, headers: { "If-Match": stale }, body: { enabled: true } });
    expect(conflict.status).toBe(412);
    expect(conflict.headers.get("etag")).toBe(`"${patched.body.resourceVersion}"`);
    const badUrl = await api.call("PATCH", `/v1/webhooks/${id}`, { token: adminA, body: { url: "http://10.1.2.3/" } });
    expect(badUrl.status).toBe(422);
    expect(badUrl.body.errors[0].pointer).toBe("/url");
    const unknown = await api.call("PATCH", `/v1/webhooks/${id}`, { token: adminA, body: { projectId: teamB } });
    expect(unknown.status).toBe(400);
    const enabled = await api.call("PATCH", `/v1/webhooks/${id}`, { token: adminA, body: { enabled: true } });
    expect(enabled.body.enabled).toBe(true);
    expect(enabled.body).not.toHaveProperty("disabledReason");
  });

  it("rotates the secret: a new one, once, with the old one live for 24 h", async () => {
    const created = await api.call("POST", "/v1/webhooks", { token: adminA, body: { url: HOOK, eventTypes: ["*"] } });
    const rotated = await api.call("POST", `/v1/webhooks/${created.body.id}/rotate-secret`, { token: adminA });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    const expires = Date.parse(rotated.body.previousSecretExpiresAt);
    expect(expires - api.clock.now().getTime()).toBe(24 * 3600 * 1000);
    const read = await api.call("GET", `/v1/webhooks/${created.body.id}`, { token: adminA });
    expect(read.body).not.toHaveProperty("secret");
  });

  it("deletes an endpoint and its log; unknown ids are 404", async () => {
    const created = await api.call("POST", "/v1/webhooks", { token: adminA, body: { url: HOOK, eventTypes: ["*"] } });
    expect((await api.call("DELETE", `/v1/webhooks/${created.body.id}`, { token: adminA })).status).toBe(204);
    expect((await api.call("GET", `/v1/webhooks/${created.body.id}`, { token: adminA })).status).toBe(404);
    expect((await api.call("DELETE", `/v1/webhooks/${created.body.id}`, { token: adminA })).status).toBe(404);
    expect((await api.call("GET", "/v1/webhooks/whk_nope")).status).toBe(404);
    expect((await api.call("GET", "/v1/webhooks/whk_nope/deliveries")).status).toBe(404);
    expect((await api.call("POST", "/v1/webhooks/whk_nope/deliveries/dlv_nope/redeliver")).status).toBe(404);
  });

  it("pages the list with a stable cursor", async () => {
    const all = (await api.call("GET", "/v1/webhooks?limit=200")).body.items as Array<{ id: string }>;
    const first = await api.call("GET", "/v1/webhooks?limit=2");
    const rest = await api.call("GET", `/v1/webhooks?limit=200&cursor=${first.body.nextCursor}`);
    expect([...first.body.items, ...rest.body.items].map((w: { id: string }) => w.id)).toEqual(all.map((w) => w.id));
    expect(rest.body.nextCursor).toBeNull();
  });

  it("runs the dispatcher on request for an installation admin only", async () => {
    const installationAdmin = await api.createKey("admin");
    for (const token of [adminA, installationEditor, viewerA]) {
      const res = await api.call("POST", "/v1/internal/dispatch", { token });
      expect(res.status).toBe(403);
    }
    expect((await api.call("POST", "/v1/internal/dispatch", { token: null })).status).toBe(401);
    const ran = await api.call("POST", "/v1/internal/dispatch", { token: installationAdmin });
    expect(ran.status).toBe(200);
    expect(ran.body).toEqual({
      fannedOut: expect.any(Number),
      attempted: expect.any(Number),
      succeeded: expect.any(Number),
      failed: 0,
      more: false,
    });
  });
});
