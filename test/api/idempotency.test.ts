// Idempotency-Key on POST (Stripe's model), through app.request() on PGlite and PostgreSQL:
// the same key and body replay the first success with `Idempotent-Replayed: true`; another
// body → 422; a duplicate while the first is in flight → 409; kept at least 24 h; failed
// requests keep nothing; keys are per credential; a malformed key → 400.
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotencyKeys } from "../../db/schema.ts";
import { authenticate } from "../../src/services/auth/authenticate.ts";
import { DEFAULT_APP_CONFIG, type SystemContext } from "../../src/services/context.ts";
import { claimIdempotency, finishIdempotency, principalKey } from "../../src/services/idempotency.ts";
import type { Principal } from "../../src/domain/principal.ts";
import { ADMIN_TOKEN, createTestApi, deploymentBody, TEST_SECRET_KEYS, type TestApi } from "../support/api-harness.ts";

const DRIVERS_HERE = ["pglite", "postgres"] as const;
const HOUR = 60 * 60 * 1000;

type Answer = Awaited<ReturnType<TestApi["call"]>>;

function expectProblem(res: Answer, status: number, type?: RegExp) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get("content-type")).toContain("application/problem+json");
  expect(res.body).toMatchObject({ status, detail: expect.any(String), instance: res.headers.get("x-request-id") });
  if (type) expect(res.body.type).toMatch(type);
  expect(res.headers.get("idempotent-replayed")).toBeNull();
}

describe.each(DRIVERS_HERE)("Idempotency-Key on %s", (driver) => {
  let api: TestApi;
  let ctx: SystemContext;
  let admin: Principal;
  let keySerial = 0;
  const newKey = () => `idem-${driver}-${++keySerial}-${crypto.randomUUID()}`;

  beforeAll(async () => {
    api = await createTestApi(driver);
    ctx = { db: api.database.db, clock: api.clock, config: { ...DEFAULT_APP_CONFIG, adminToken: ADMIN_TOKEN, secretKeys: TEST_SECRET_KEYS } };
    admin = await authenticate({ ctx, input: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  });
  afterAll(async () => {
    await api?.close();
  });

  const body = (name: string, overrides: Record<string, unknown> = {}) =>
    deploymentBody(name, { projectId: api.defaultProjectId, ...overrides });
  const create = (key: string, payload: unknown, token?: string) =>
    api.call("POST", "/v1/deployments", { body: payload, headers: { "Idempotency-Key": key }, token });

  async function count(): Promise<number> {
    let total = 0;
    let cursor: string | null = null;
    do {
      const res: Answer = await api.call("GET", `/v1/deployments?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      total += res.body.items.length;
      cursor = res.body.nextCursor;
    } while (cursor);
    return total;
  }

  /** The stored records of a key, whoever owns them. */
  const storedRecords = (key: string) => api.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key));

  it("replays the first success: same status, body, Location and ETag, marked replayed, nothing new created", async () => {
    const key = newKey();
    const before = await count();
    const first = await create(key, body("replayed"));
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(await count()).toBe(before + 1);

    for (let i = 0; i < 3; i++) {
      const again = await create(key, body("replayed"));
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.body).toEqual(first.body);
      expect(again.headers.get("location")).toBe(first.headers.get("location"));
      expect(again.headers.get("etag")).toBe(first.headers.get("etag"));
      expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
    }
    expect(await count()).toBe(before + 1);

    // It is the stored answer, not a fresh read: a later change does not show in the replay.
    const patched = await api.call("PATCH", `/v1/deployments/${first.body.id}`, { body: { labels: { changed: "yes" } } });
    expect(patched.status).toBe(200);
    const replay = await create(key, body("replayed"));
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    expect(replay.body.labels).toEqual({});
  });

  it("works on every POST, e.g. creating a project", async () => {
    const key = newKey();
    const first = await api.call("POST", "/v1/projects", { body: { name: `idem-project-${driver}` }, headers: { "Idempotency-Key": key } });
    expect(first.status).toBe(201);
    const again = await api.call("POST", "/v1/projects", { body: { name: `idem-project-${driver}` }, headers: { "Idempotency-Key": key } });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const projects = await api.call("GET", "/v1/projects?limit=200");
    expect(projects.body.items.filter((p: { name: string }) => p.name === `idem-project-${driver}`)).toHaveLength(1);
  });

  it("the same key with another body, or on another path → 422, nothing created", async () => {
    const key = newKey();
    expect((await create(key, body("first-body"))).status).toBe(201);
    const before = await count();

    const otherBody = await create(key, body("second-body"));
    expectProblem(otherBody, 422, /idempotency-key-reused$/);
    const otherLabels = await create(key, body("first-body", { labels: { a: "b" } }));
    expectProblem(otherLabels, 422, /idempotency-key-reused$/);
    const otherPath = await api.call("POST", "/v1/projects", { body: { name: "never-made" }, headers: { "Idempotency-Key": key } });
    expectProblem(otherPath, 422, /idempotency-key-reused$/);

    expect(await count()).toBe(before);
    const projects = await api.call("GET", "/v1/projects?limit=200");
    expect(projects.body.items.map((p: { name: string }) => p.name)).not.toContain("never-made");
    // The original is still replayed afterwards.
    const replay = await create(key, body("first-body"));
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
  });

  it("a duplicate while the first request is still in flight → 409; once released the key runs", async () => {
    const key = newKey();
    const payload = body("in-flight");
    const claim = await claimIdempotency({
      ctx,
      input: { principal: admin, key, method: "POST", path: "/v1/deployments", body: JSON.stringify(payload) },
    });
    expect(claim).toEqual({ outcome: "claimed" });
    const before = await count();

    const duplicate = await create(key, payload);
    expectProblem(duplicate, 409, /idempotency-key-in-flight$/);
    // Another body under the in-flight key is still a mismatch, not a wait.
    expectProblem(await create(key, body("in-flight-other")), 422, /idempotency-key-reused$/);
    expect(await count()).toBe(before);
    // The refused duplicates did not disturb the first request's claim.
    const [record] = await storedRecords(key);
    expect(record).toMatchObject({ principal: principalKey(admin), completed: false });

    // The first request fails (stores nothing): the same key may now run.
    await finishIdempotency({ ctx, input: { principal: admin, key, response: null } });
    const retried = await create(key, payload);
    expect(retried.status).toBe(201);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
    expect(await count()).toBe(before + 1);
  });

  it("an in-flight claim older than its lease (a crashed request) is taken over", async () => {
    const key = newKey();
    const payload = body("crashed-claim");
    await claimIdempotency({
      ctx,
      input: { principal: admin, key, method: "POST", path: "/v1/deployments", body: JSON.stringify(payload) },
    });
    expectProblem(await create(key, payload), 409, /idempotency-key-in-flight$/);
    api.clock.advance(61_000);
    const taken = await create(key, payload);
    expect(taken.status).toBe(201);
    expect((await create(key, payload)).headers.get("idempotent-replayed")).toBe("true");
  });

  it("concurrent duplicates: exactly one runs; the others are replays or 409 in flight", async () => {
    const key = newKey();
    const before = await count();
    const answers = await Promise.all(Array.from({ length: 8 }, () => create(key, body("raced"))));
    const ran = answers.filter((a) => a.status === 201 && a.headers.get("idempotent-replayed") === null);
    const replayed = answers.filter((a) => a.status === 201 && a.headers.get("idempotent-replayed") === "true");
    const inFlight = answers.filter((a) => a.status === 409);
    expect(ran).toHaveLength(1);
    expect(replayed.length + inFlight.length).toBe(answers.length - 1);
    for (const a of replayed) expect(a.body).toEqual(ran[0]!.body);
    for (const a of inFlight) expect(a.body.type).toMatch(/idempotency-key-in-flight$/);
    expect(await count()).toBe(before + 1);
  });

  it("a request that failed validation stores nothing: the same key then runs the fixed request", async () => {
    const key = newKey();
    const before = await count();

    const invalid = await create(key, { ...body("fixed-later"), colour: "red" });
    expectProblem(invalid, 400);
    expect(await storedRecords(key)).toEqual([]);
    const malformed = await api.call("POST", "/v1/deployments", {
      rawBody: "{not json",
      headers: { "Idempotency-Key": key, "Content-Type": "application/json" },
    });
    expectProblem(malformed, 400);
    expect(await storedRecords(key)).toEqual([]);
    const refused = await create(key, body("fixed-later", { spec: { ...body("x").spec, roles: [{ name: "main", replicas: 100_000 }] } }));
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(await storedRecords(key)).toEqual([]);
    expect(await count()).toBe(before);

    const fixed = await create(key, body("fixed-later"));
    expect(fixed.status).toBe(201);
    expect(fixed.headers.get("idempotent-replayed")).toBeNull();
    expect(await storedRecords(key)).toEqual([expect.objectContaining({ completed: true, responseStatus: 201 })]);
    expect(await count()).toBe(before + 1);
  });

  it("keeps a stored answer sealed: a new API key's token is not in the row, yet the replay is byte-identical", async () => {
    const key = newKey();
    const headers = { "Idempotency-Key": key };
    const first = await api.call("POST", "/v1/api-keys", { body: { name: "sealed-replay", role: "viewer" }, headers });
    expect(first.status).toBe(201);
    const token: string = first.body.token;
    expect(token).toMatch(/^bp_/);
    const [record] = await storedRecords(key);
    expect(record!.responseBody).toMatch(/^s1\./);
    expect(JSON.stringify(record)).not.toContain(token);
    const replay = await api.call("POST", "/v1/api-keys", { body: { name: "sealed-replay", role: "viewer" }, headers });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);

    // Sealed for its own row: copied onto another key's record it does not open (a 500, and nothing replayed).
    const other = newKey();
    expect((await create(other, body("sealed-other"))).status).toBe(201);
    await api.database.db.update(idempotencyKeys).set({ responseBody: record!.responseBody }).where(eq(idempotencyKeys.key, other));
    const moved = await create(other, body("sealed-other"));
    expect(moved.status).toBe(500);
    expect(JSON.stringify(moved.body)).not.toContain(token);
  });

  it("a refused create (409 name taken) stores nothing either", async () => {
    expect((await create(newKey(), body("taken-name"))).status).toBe(201);
    const key = newKey();
    const conflict = await create(key, body("taken-name"));
    expectProblem(conflict, 409, /conflict$/);
    expect(await storedRecords(key)).toEqual([]);
    // The key is free for another request.
    expect((await create(key, body("free-name"))).status).toBe(201);
  });

  it("is kept 24 h: replayed just before, forgotten just after", async () => {
    const key = newKey();
    const first = await create(key, body("day-old"));
    expect(first.status).toBe(201);

    api.clock.advance(24 * HOUR - 1000);
    const stillKept = await create(key, body("day-old"));
    expect(stillKept.headers.get("idempotent-replayed")).toBe("true");
    expect(stillKept.body).toEqual(first.body);

    api.clock.advance(2000);
    // Forgotten: the same body runs again and meets the deployment it made a day ago.
    const rerun = await create(key, body("day-old"));
    expectProblem(rerun, 409, /conflict$/);
    // …and another body under the old key is a fresh request, not a 422 mismatch.
    const fresh = await create(key, body("day-old-two"));
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get("idempotent-replayed")).toBeNull();
  });

  it("keys are per credential: another key's same Idempotency-Key is independent", async () => {
    const editor = await api.createKey("editor", api.defaultProjectId);
    const otherAdmin = await api.createKey("admin");
    const key = newKey();
    const mine = await create(key, body("per-credential"));
    expect(mine.status).toBe(201);

    // Same key, same body, another credential: not a replay; it runs and meets the name.
    const theirs = await create(key, body("per-credential"), editor);
    expectProblem(theirs, 409, /conflict$/);
    // Same key, another body, another credential: not a mismatch; it runs.
    const theirsOther = await create(key, body("per-credential-2"), otherAdmin);
    expect(theirsOther.status).toBe(201);
    expect(theirsOther.headers.get("idempotent-replayed")).toBeNull();
    expect((await create(key, body("per-credential-2"), otherAdmin)).headers.get("idempotent-replayed")).toBe("true");

    // Mine is still replayed to me.
    const replay = await create(key, body("per-credential"));
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(mine.body);
    const owners = (await storedRecords(key)).map((r) => r.principal).sort();
    expect(owners).toHaveLength(2);
  });

  it.each([
    ["300 characters", "k".repeat(300)],
    ["256 characters", "k".repeat(256)],
    ["empty", ""],
    ["a space inside", "two words"],
    ["non-ASCII", "clé"],
    ["a tab", "a\tb"],
  ])("a malformed key (%s) → 400 naming the header, nothing created or stored", async (_, key) => {
    const before = await count();
    const res = await create(key, body("bad-key"));
    expectProblem(res, 400);
    expect(res.body.errors).toEqual([expect.objectContaining({ header: "Idempotency-Key" })]);
    expect(await count()).toBe(before);
    const stored = await api.database.db
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.principal, principalKey(admin)), eq(idempotencyKeys.key, key)));
    expect(stored).toEqual([]);
  });

  it("a key of 255 visible characters is accepted", async () => {
    const suffix = newKey();
    const key = "~".repeat(255 - suffix.length) + suffix;
    expect(key).toHaveLength(255);
    const res = await create(key, body("long-key"));
    expect(res.status).toBe(201);
    expect((await create(key, body("long-key"))).headers.get("idempotent-replayed")).toBe("true");
  });
});
