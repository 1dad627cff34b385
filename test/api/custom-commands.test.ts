// The take-over tier (a role's `command`) needs an installation admin key or a project with
// allowCustomCommands (docs/decisions/0064): create, PATCH, PUT and rollback by an editor that
// set or change one are refused with 403 problem+json naming the field; only an installation admin sets the flag.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

const TAKE_OVER = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--port", "8000"];
const withCommand = (command: string[]) => ({ ...deploymentBody("x").spec, roles: [{ name: "main", resources: { gpus: 1 }, command }] });

describe.each(["pglite", "postgres"] as const)("custom commands on %s", (driver) => {
  let api: TestApi;
  let plain: string;
  let allowing: string;
  let editor: string;
  let projectAdmin: string;
  let allowingEditor: string;

  beforeAll(async () => {
    api = await createTestApi(driver);
    plain = await api.createProject("plain");
    allowing = await api.createProject("allowing");
    editor = await api.createKey("editor", plain);
    projectAdmin = await api.createKey("admin", plain);
    allowingEditor = await api.createKey("editor", allowing);
    const flagged = await api.call("PATCH", `/v1/projects/${allowing}`, { body: { allowCustomCommands: true } });
    expect(flagged.status).toBe(200);
    expect(flagged.body.allowCustomCommands).toBe(true);
  });
  afterAll(async () => {
    await api?.close();
  });

  const expectRefused = (res: { status: number; headers: Headers; body: any }, pointer = "/spec/roles/0/command") => {
    expect(res.status).toBe(403);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect(res.body.detail).toContain("allowed only for installation admins or projects with allowCustomCommands");
    expect(res.body.detail).toContain("ask an installation admin");
    expect(res.body.errors).toEqual([{ pointer, message: expect.stringContaining("allowCustomCommands") }]);
  };

  it("shows the flag on every project, false by default", async () => {
    const res = await api.call("GET", `/v1/projects/${plain}`);
    expect(res.body.allowCustomCommands).toBe(false);
  });

  it("refuses an editor's or a project admin's create with a command, and writes nothing", async () => {
    for (const token of [editor, projectAdmin]) {
      expectRefused(await api.call("POST", "/v1/deployments", { token, body: { name: "takeover", spec: withCommand(TAKE_OVER) } }));
    }
    expect((await api.call("GET", "/v1/deployments/takeover", { token: editor })).status).toBe(404);
  });

  it("lets an installation admin create one, and an editor of an allowing project", async () => {
    const byAdmin = await api.call("POST", "/v1/deployments", { body: { name: "admin-takeover", projectId: plain, spec: withCommand(TAKE_OVER) } });
    expect(byAdmin.status).toBe(201);
    const byEditor = await api.call("POST", "/v1/deployments", { token: allowingEditor, body: { name: "team-takeover", spec: withCommand(TAKE_OVER) } });
    expect(byEditor.status).toBe(201);
  });

  it("keeps an admitted command: an editor may scale or relabel it, not change the command", async () => {
    const scaled = await api.call("PATCH", "/v1/deployments/admin-takeover", {
      token: editor,
      body: { spec: { roles: [{ name: "main", replicas: 2, resources: { gpus: 1 }, command: TAKE_OVER }] } },
    });
    expect(scaled.status).toBe(200);
    expect(scaled.body.spec.roles[0].replicas).toBe(2);
    const changed = await api.call("PATCH", "/v1/deployments/admin-takeover", {
      token: editor,
      body: { spec: { roles: [{ name: "main", replicas: 2, resources: { gpus: 1 }, command: [...TAKE_OVER, "--trust-remote-code"] }] } },
    });
    expectRefused(changed);
    const replaced = await api.call("PUT", "/v1/deployments/admin-takeover", { token: editor, body: { spec: withCommand(["sh", "-c", "id"]) } });
    expectRefused(replaced);
    const read = await api.call("GET", "/v1/deployments/admin-takeover", { token: editor });
    expect(read.body.spec.roles[0].command).toEqual(TAKE_OVER);
    expect(read.body.generation).toBe(2);
  });

  it("refuses an editor's PATCH that adds a command to a deployment without one", async () => {
    const created = await api.call("POST", "/v1/deployments", { token: editor, body: deploymentBody("plain-app") });
    expect(created.status).toBe(201);
    const res = await api.call("PATCH", "/v1/deployments/plain-app", {
      token: editor,
      body: { spec: { roles: [{ name: "main", resources: { gpus: 1 }, command: TAKE_OVER }] } },
    });
    expectRefused(res);
    expect((await api.call("GET", "/v1/deployments/plain-app", { token: editor })).body.generation).toBe(1);
  });

  it("refuses an editor's rollback that brings a removed command back; removing it is allowed", async () => {
    const removed = await api.call("PATCH", "/v1/deployments/admin-takeover", {
      token: editor,
      body: { spec: { roles: [{ name: "main", replicas: 2, resources: { gpus: 1 }, command: [] }] } },
    });
    expect(removed.status).toBe(200);
    expect(removed.body.spec.roles[0].command).toEqual([]);
    expectRefused(await api.call("POST", "/v1/deployments/admin-takeover/rollback", { token: editor, body: { generation: 2 } }));
    const byAdmin = await api.call("POST", "/v1/deployments/admin-takeover/rollback", { body: { generation: 2 } });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.spec.roles[0].command).toEqual(TAKE_OVER);
  });

  it("lets only an installation admin set the flag", async () => {
    for (const token of [editor, projectAdmin]) {
      const res = await api.call("PATCH", `/v1/projects/${plain}`, { token, body: { allowCustomCommands: true } });
      expect(res.status).toBe(403);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
    }
    expect((await api.call("GET", `/v1/projects/${plain}`)).body.allowCustomCommands).toBe(false);
    const created = await api.call("POST", "/v1/projects", { body: { name: "born-allowing", allowCustomCommands: true } });
    expect(created.status).toBe(201);
    expect(created.body.allowCustomCommands).toBe(true);
    const bad = await api.call("PATCH", `/v1/projects/${plain}`, { body: { allowCustomCommands: "yes" } });
    expect(bad.status).toBe(400);
  });
});
