// Revision history and rollback (docs/design.md §3.1): every generation's spec recorded by the
// write that made it (create, PATCH, PUT, resize, the autoscaler's replicas PATCH), listed newest
// first, restored by POST …/rollback through the PATCH write path; on every database driver.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deploymentRevisions } from "../../db/schema.ts";
import { REVISIONS_RETAINED } from "../../src/domain/revisions.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";
import { DRIVERS } from "../support/databases.ts";

const PROBLEM = "https://berth.dev/problems/";
const node = (name: string, gpus: number) => ({ name, gpuType: "nvidia-h100-80gb", gpuCapacity: gpus, gpuAllocatable: gpus, gpuFree: gpus });

describe.each(DRIVERS)("revisions and rollback on %s", (driver) => {
  let api: TestApi;
  let agent: { token: string; clusterId: string };
  let team: string;
  let editor: string;
  let viewer: string;
  let outsider: string;

  beforeAll(async () => {
    api = await createTestApi(driver);
    agent = await api.createAgent("revisions-cluster");
    await api.call("POST", "/v1/agent/heartbeat", { token: agent.token, body: { agentVersion: "t", inventory: { nodes: [node("n1", 8), node("n2", 8)] } } });
    team = await api.createProject("revisions-team");
    editor = await api.createKey("editor", team);
    viewer = await api.createKey("viewer", team);
    outsider = await api.createKey("admin", await api.createProject("revisions-other"));
  });
  afterAll(async () => {
    await api?.close();
  });

  const create = async (name: string, spec?: Record<string, unknown>) => {
    const body = deploymentBody(name, spec ? { spec: { ...deploymentBody(name).spec, ...spec } } : {});
    const res = await api.call("POST", "/v1/deployments", { token: editor, body });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    return res.body;
  };
  const patch = async (id: string, spec: unknown, token = editor) => {
    const res = await api.call("PATCH", `/v1/deployments/${id}`, { token, body: { spec } });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    return res.body;
  };
  /** An elastic EP deployment created at width 2 and resized to 4 (generation 2). */
  const createResizedElastic = async (name: string) => {
    const created = await api.call("POST", "/v1/deployments", {
      token: editor,
      body: {
        name,
        spec: {
          model: { name: "deepseek-ai/DeepSeek-V2-Lite" },
          engine: { name: "vllm", image: "vllm/vllm-openai:v0.29.0" },
          roles: [{ name: "ep", resources: { gpus: 1 }, parallelism: { expert: true }, elastic: { width: 2, maxWidth: 8 } }],
        },
      },
    });
    expect(created.status).toBe(201);
    expect((await api.call("POST", `/v1/deployments/${created.body.id}/roles/ep/resize`, { token: editor, body: { width: 4 } })).status).toBe(202);
    return created.body;
  };
  const revisions = (idOrName: string, query = "", token = viewer) => api.call("GET", `/v1/deployments/${idOrName}/revisions${query}`, { token });
  const rollback = (idOrName: string, generation: unknown, options: { token?: string; headers?: Record<string, string> } = {}) =>
    api.call("POST", `/v1/deployments/${idOrName}/rollback`, { token: options.token ?? editor, body: { generation }, headers: options.headers });

  it("records each generation's spec, who wrote it and when, newest first, by id or by name", async () => {
    const dep = await create("history");
    api.clock.advance(60_000);
    await patch(dep.id, { engine: { image: "vllm/vllm-openai:v0.11.1" } });
    // A labels-only change takes no generation and so no revision.
    expect((await api.call("PATCH", `/v1/deployments/${dep.id}`, { token: editor, body: { labels: { team: "x" } } })).status).toBe(200);
    api.clock.advance(60_000);
    const replaced = await api.call("PUT", `/v1/deployments/${dep.id}`, { token: editor, body: { spec: { ...deploymentBody("x").spec, roles: [{ name: "main", replicas: 2, resources: { gpus: 1 } }] } } });
    expect(replaced.status).toBe(200);
    const res = await revisions("history");
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.items.map((r: { generation: number }) => r.generation)).toEqual([3, 2, 1]);
    const [third, second, first] = res.body.items;
    expect(first).toEqual({ generation: 1, spec: dep.spec, actor: { kind: "user", keyId: expect.stringMatching(/^key_/) }, createdAt: "2026-11-30T12:00:00.000Z" });
    expect(second.spec.engine.image).toBe("vllm/vllm-openai:v0.11.1");
    expect(second.createdAt).toBe("2026-11-30T12:01:00.000Z");
    expect(third.spec).toEqual(replaced.body.spec);
    expect(third.spec.roles[0].replicas).toBe(2);
    expect((await revisions(dep.id)).body).toEqual(res.body);
  });

  it("records the agent credential's replicas PATCH as the autoscaler, and a resize's new width", async () => {
    const dep = await create("scaled", { scaling: { mode: "active", roles: [{ name: "main", maxReplicas: 4 }] } });
    await patch(dep.id, { roles: [{ name: "main", replicas: 3 }] }, agent.token);
    const [latest] = (await revisions(dep.id)).body.items;
    expect(latest).toMatchObject({ generation: 2, actor: { kind: "autoscaler", keyId: expect.any(String) } });
    expect(latest.spec.roles[0].replicas).toBe(3);

    const elastic = await createResizedElastic("elastic");
    const items = (await revisions(elastic.id)).body.items;
    expect(items.map((r: { spec: { roles: { elastic: { width: number } }[] } }) => r.spec.roles[0]!.elastic.width)).toEqual([4, 2]);
  });

  it("pages newest first with an opaque cursor and refuses a cursor it did not issue", async () => {
    const dep = await create("paged");
    for (const replicas of [2, 3, 4, 5]) await patch(dep.id, { roles: [{ name: "main", replicas }] });
    const seen: number[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const res: { status: number; body: { items: { generation: number }[]; nextCursor: string | null } } = await revisions(
        dep.id,
        `?limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items.map((r) => r.generation));
      cursor = res.body.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual([5, 4, 3, 2, 1]);
    // A scaling-events cursor (tagged seq) is not a revisions cursor.
    const foreign = Buffer.from(JSON.stringify(["seq", 3])).toString("base64url");
    const bad = await revisions(dep.id, `?cursor=${foreign}`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ parameter: "cursor", message: "not a valid cursor; pass the nextCursor of a previous page, or omit it to start over" }]);
  });

  it("keeps the newest revisions only, pruned by the write that takes a new one", async () => {
    const dep = await create("pruned");
    const writes = REVISIONS_RETAINED + 2;
    for (let i = 0; i < writes; i++) await patch(dep.id, { roles: [{ name: "main", replicas: (i % 3) + 2 }] });
    const newest = writes + 1;
    const res = await revisions(dep.id, "?limit=200");
    const generations = res.body.items.map((r: { generation: number }) => r.generation);
    expect(generations.length).toBe(REVISIONS_RETAINED);
    expect(generations[0]).toBe(newest);
    expect(generations[generations.length - 1]).toBe(newest - REVISIONS_RETAINED + 1);
    const gone = await rollback(dep.id, 1);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({
      type: `${PROBLEM}not-found`,
      title: "Not found",
      status: 404,
      detail:
        `Deployment "pruned" has no retained generation 1 (generations ${newest - REVISIONS_RETAINED + 1}–${newest} are retained); ` +
        `list them with GET /v1/deployments/${dep.id}/revisions.`,
      instance: expect.any(String),
      generation: 1,
      retained: { oldest: newest - REVISIONS_RETAINED + 1, newest },
    });
  });

  it("rolls back: a new generation with that spec, deployment.updated, and a revision marked rollbackOf", async () => {
    const dep = await create("undo-me");
    await patch(dep.id, { engine: { image: "vllm/vllm-openai:v0.11.1" }, roles: [{ name: "main", replicas: 2 }] });
    const res = await rollback("undo-me", 1);
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe(`"${res.body.resourceVersion}"`);
    expect(res.body.generation).toBe(3);
    expect(res.body.spec).toEqual(dep.spec);
    const [latest] = (await revisions(dep.id)).body.items;
    expect(latest).toEqual({ generation: 3, spec: dep.spec, actor: { kind: "user", keyId: expect.any(String) }, createdAt: expect.any(String), rollbackOf: 1 });
    const events = (await api.call("GET", `/v1/events?deploymentId=${dep.id}`)).body.items;
    expect(events.map((e: { type: string }) => e.type)).toEqual(["deployment.created", "deployment.updated", "deployment.updated"]);
    expect(events[2].data).toMatchObject({ specChanged: true, deployment: { generation: 3 } });

    // Again: the target equals the current spec, so nothing is written and the answer is the same deployment.
    const again = await rollback(dep.id, 1);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(res.body);
    expect((await revisions(dep.id)).body.items).toHaveLength(3);
    // Rolling back to the current generation is the same no-op.
    expect((await rollback(dep.id, 3)).body.resourceVersion).toBe(res.body.resourceVersion);
  });

  it("keeps the autoscaler's replicas while scaling is active, and elastic widths always", async () => {
    const dep = await create("keep-replicas", { scaling: { mode: "active", roles: [{ name: "main", maxReplicas: 6 }] } });
    await patch(dep.id, { engine: { image: "vllm/vllm-openai:v0.11.1" } });
    await patch(dep.id, { roles: [{ name: "main", replicas: 5 }] }, agent.token);
    const res = await rollback(dep.id, 1);
    expect(res.status).toBe(200);
    expect(res.body.generation).toBe(4);
    expect(res.body.spec.engine.image).toBe("vllm/vllm-openai:v0.11.0");
    expect(res.body.spec.roles[0].replicas).toBe(5);
    // Generation 1 again differs in replicas alone: with the autoscaler owning them, that is no change.
    const noop = await rollback(dep.id, 1);
    expect(noop.status).toBe(200);
    expect(noop.body.generation).toBe(4);

    const elastic = await createResizedElastic("keep-width");
    const kept = await rollback(elastic.id, 1);
    expect(kept.status).toBe(200);
    expect(kept.body.generation).toBe(2);
    expect(kept.body.spec.roles[0].elastic).toEqual({ width: 4, maxWidth: 8 });
  });

  it("honours If-Match and replays an Idempotency-Key", async () => {
    const dep = await create("conditional");
    const patched = await patch(dep.id, { roles: [{ name: "main", replicas: 2 }] });
    const stale = await rollback(dep.id, 1, { headers: { "If-Match": `"${dep.resourceVersion}"` } });
    expect(stale.status).toBe(412);
    expect((await api.call("GET", `/v1/deployments/${dep.id}`)).body.generation).toBe(2);
    const key = `rollback-${driver}`;
    const first = await rollback(dep.id, 1, { headers: { "If-Match": `"${patched.resourceVersion}"`, "Idempotency-Key": key } });
    expect(first.status).toBe(200);
    expect(first.body.generation).toBe(3);
    const replay = await rollback(dep.id, 1, { headers: { "If-Match": `"${patched.resourceVersion}"`, "Idempotency-Key": key } });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
  });

  it("refuses a revision that differs in identity fields with 422 naming the field", async () => {
    const dep = await create("identity");
    // A revision no write could make today (identity fields never change), planted to see the write path refuse it.
    const planted = { ...dep.spec, model: { ...dep.spec.model, name: "Qwen/Qwen3-32B" } };
    await api.database.db.insert(deploymentRevisions).values({
      deploymentId: dep.id,
      generation: 7,
      spec: planted,
      actor: { kind: "system" },
      rollbackOf: null,
      createdAt: new Date("2026-11-30T11:00:00.000Z"),
    });
    const res = await rollback(dep.id, 7);
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ pointer: "/spec/model/name", message: 'model.name was "Qwen/Qwen3-8B"; it is immutable: create a new deployment instead' }]);
    expect((await api.call("GET", `/v1/deployments/${dep.id}`)).body).toMatchObject({ generation: 1, spec: { model: { name: "Qwen/Qwen3-8B" } } });
  });

  it("answers 404 for unknown deployments and generations, 400 for a bad body, and checks keys", async () => {
    const dep = await create("guarded");
    expect((await revisions("nope")).status).toBe(404);
    expect((await revisions(dep.id, "", outsider)).status).toBe(404);
    expect((await rollback(dep.id, 1, { token: outsider })).status).toBe(404);
    const unknown = await rollback(dep.id, 9);
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe(`Deployment "guarded" has no retained generation 9 (only generation 1 is retained); list them with GET /v1/deployments/${dep.id}/revisions.`);
    const viewerWrite = await rollback(dep.id, 1, { token: viewer });
    expect(viewerWrite.status).toBe(403);
    expect((await revisions(dep.id, "", agent.token)).status).toBe(403);
    expect((await rollback(dep.id, 1, { token: agent.token })).status).toBe(403);
    const bad = await api.call("POST", `/v1/deployments/${dep.id}/rollback`, { token: editor, body: { generation: "first", extra: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(["/extra", "/generation"]);
    expect((await rollback(dep.id, 0)).status).toBe(400);
  });

  it("goes with its deployment", async () => {
    const dep = await create("short-lived");
    await patch(dep.id, { roles: [{ name: "main", replicas: 2 }] });
    expect((await api.call("DELETE", `/v1/deployments/${dep.id}`, { token: editor })).status).toBeLessThan(300);
    // The cluster's agent has heartbeated, so the deployment waits for it to confirm removal.
    expect((await api.call("DELETE", `/v1/agent/deployments/${dep.id}`, { token: agent.token })).status).toBeLessThan(300);
    expect((await revisions(dep.id)).status).toBe(404);
    const left = await api.database.db.select().from(deploymentRevisions);
    expect(left.filter((row) => row.deploymentId === dep.id)).toEqual([]);
  });
});
