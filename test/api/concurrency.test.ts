// Optimistic concurrency: 32 clients at once do GET → modify → PUT with If-Match on one
// deployment. Every write is either accepted (200) or refused with 412; the accepted ones
// form one unbroken chain (each one's If-Match is the version the previous one made), so
// replaying them in resourceVersion order gives exactly the final state: no lost update.
// PostgreSQL (a pool of 10 connections, real row locks) is the real proof; PGlite runs the
// same test on its single connection.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RATE_LIMITS } from "../../src/services/rate-limits/config.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

const DRIVERS_HERE = ["postgres", "pglite"] as const;
const CLIENTS = 32;

interface State {
  spec: { roles: Array<{ replicas: number } & Record<string, unknown>> } & Record<string, unknown>;
  labels: Record<string, string>;
}

interface Write {
  client: number;
  attempt: number;
  ifMatch: string;
  sent: State;
  status: number;
  /** The answer's body: the deployment on 200, the problem otherwise. */
  answer: any;
  etag: string | null;
}

const etag = (resourceVersion: number) => `"${resourceVersion}"`;

/** Client N's change: its own label, and replicas of the first role raised by N + 1. */
function modify(client: number, attempt: number, state: State): State {
  const spec = structuredClone(state.spec);
  spec.roles[0]!.replicas += client + 1;
  return { spec, labels: { ...state.labels, [`writer-${client}`]: `attempt-${attempt}` } };
}

describe.each(DRIVERS_HERE)("concurrent If-Match writers on %s", (driver) => {
  let api: TestApi;

  beforeAll(async () => {
    // Thousands of admin writes under a clock that does not move: far past the admin bucket, which is not what this tests.
    api = await createTestApi(driver, { rateLimits: { ...DEFAULT_RATE_LIMITS, quotas: { ...DEFAULT_RATE_LIMITS.quotas, admin: 1_000_000 } } });
  });
  afterAll(async () => {
    await api?.close();
  });

  async function createTarget(name: string) {
    const created = await api.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId: api.defaultProjectId }) });
    expect(created.status).toBe(201);
    return created.body as { id: string; resourceVersion: number; generation: number } & State;
  }

  /** One client: GET → modify → PUT with If-Match, at most `attempts` times until accepted. */
  async function client(id: string, n: number, attempts: number, writes: Write[], startAfterMs = 0): Promise<void> {
    if (startAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, startAfterMs));
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const read = await api.call("GET", `/v1/deployments/${id}`);
      expect(read.status).toBe(200);
      const ifMatch = read.headers.get("etag")!;
      expect(ifMatch).toBe(etag(read.body.resourceVersion));
      const sent = modify(n, attempt, read.body);
      const res = await api.call("PUT", `/v1/deployments/${id}`, { body: sent, headers: { "If-Match": ifMatch } });
      writes.push({ client: n, attempt, ifMatch, sent, status: res.status, answer: res.body, etag: res.headers.get("etag") });
      if (res.status !== 412) return;
    }
  }

  /**
   * Checks the outcome against a replay: the accepted writes, in resourceVersion order, each
   * based on the version the previous one made, each exactly the client's change of the
   * replayed state; the final GET is the last of them. Returns the accepted writes in order.
   */
  async function checkAgainstReplay(initial: Awaited<ReturnType<typeof createTarget>>, writes: Write[]): Promise<Write[]> {
    const statuses = new Set(writes.map((w) => w.status));
    expect([...statuses].filter((s) => s !== 200 && s !== 412), JSON.stringify(writes.find((w) => w.status !== 200 && w.status !== 412)?.answer)).toEqual([]);

    const accepted = writes.filter((w) => w.status === 200).sort((a, b) => a.answer.resourceVersion - b.answer.resourceVersion);
    const rejected = writes.filter((w) => w.status === 412);
    expect(accepted.length).toBeGreaterThanOrEqual(1);

    let state: State = { spec: initial.spec, labels: initial.labels };
    let version = initial.resourceVersion;
    let generation = initial.generation;
    for (const write of accepted) {
      // The chain is unbroken: this write was based on exactly the previous accepted version…
      expect(write.ifMatch).toBe(etag(version));
      expect(write.answer.resourceVersion).toBeGreaterThan(version);
      expect(write.etag).toBe(etag(write.answer.resourceVersion));
      // …and is the client's change of the replayed state, stored as sent.
      expect(write.sent).toEqual(modify(write.client, write.attempt, state));
      expect(write.answer.spec).toEqual(write.sent.spec);
      expect(write.answer.labels).toEqual(write.sent.labels);
      expect(write.answer.generation).toBe(generation + 1);
      state = write.sent;
      version = write.answer.resourceVersion;
      generation = write.answer.generation;
    }

    for (const write of rejected) {
      // A 412 is a problem naming the current version, which is newer than the one it was based on.
      expect(write.answer.type).toMatch(/precondition-failed$/);
      expect(write.answer.instance).toEqual(expect.any(String));
      expect(write.etag).toBe(write.answer.currentETag);
      expect(Number(JSON.parse(write.answer.currentETag))).toBeGreaterThan(Number(JSON.parse(write.ifMatch)));
      // It lost to the accepted write that was based on the same version.
      expect(accepted.some((winner) => winner.ifMatch === write.ifMatch)).toBe(true);
    }

    const final = await api.call("GET", `/v1/deployments/${initial.id}`);
    expect(final.status).toBe(200);
    expect(final.headers.get("etag")).toBe(etag(version));
    expect(final.body.spec).toEqual(state.spec);
    expect(final.body.labels).toEqual(state.labels);
    expect(final.body.generation).toBe(generation);
    expect(final.body).toEqual(accepted[accepted.length - 1]!.answer);
    return accepted;
  }

  it("one attempt each: every write is 200 or 412, and the accepted ones replay to the final state", async () => {
    const initial = await createTarget("one-shot");
    const writes: Write[] = [];
    await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(initial.id, n, 1, writes)));
    expect(writes).toHaveLength(CLIENTS);
    const accepted = await checkAgainstReplay(initial, writes);
    console.log(`${driver}, one attempt each: ${accepted.length} accepted, ${CLIENTS - accepted.length} refused with 412`);
  }, 60_000);

  it("one attempt each, staggered starts: a longer chain, still unbroken", async () => {
    const initial = await createTarget("staggered");
    const writes: Write[] = [];
    await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(initial.id, n, 1, writes, (n % 8) * 20)));
    expect(writes).toHaveLength(CLIENTS);
    const accepted = await checkAgainstReplay(initial, writes);
    console.log(`${driver}, staggered: ${accepted.length} accepted, ${CLIENTS - accepted.length} refused with 412`);
  }, 60_000);

  it("retrying until accepted: all 32 changes land, none lost", async () => {
    const initial = await createTarget("retry-until-done");
    const writes: Write[] = [];
    await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(initial.id, n, 200, writes)));
    const accepted = await checkAgainstReplay(initial, writes);
    expect(accepted).toHaveLength(CLIENTS);
    expect(new Set(accepted.map((w) => w.client)).size).toBe(CLIENTS);

    const final = await api.call("GET", `/v1/deployments/${initial.id}`);
    const raisedBy = (CLIENTS * (CLIENTS + 1)) / 2;
    expect(final.body.spec.roles[0].replicas).toBe(initial.spec.roles[0]!.replicas + raisedBy);
    expect(Object.keys(final.body.labels).sort()).toEqual(Array.from({ length: CLIENTS }, (_, n) => `writer-${n}`).sort());
    expect(final.body.generation).toBe(initial.generation + CLIENTS);
    console.log(`${driver}, retrying: ${writes.length} PUTs for ${CLIENTS} changes (${writes.length - CLIENTS} refused with 412)`);
  }, 60_000);

  it("concurrent PATCHes with If-Match behave the same: 200 or 412, no lost label", async () => {
    const initial = await createTarget("patched-at-once");
    const answers = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, n) => {
        const res = await api.call("PATCH", `/v1/deployments/${initial.id}`, {
          body: { labels: { [`patcher-${n}`]: "1" } },
          headers: { "If-Match": etag(initial.resourceVersion) },
        });
        return { n, res };
      }),
    );
    for (const { res } of answers) expect([200, 412]).toContain(res.status);
    const winners = answers.filter(({ res }) => res.status === 200);
    // Every PATCH was based on the same version, so exactly one can win.
    expect(winners).toHaveLength(1);
    const final = await api.call("GET", `/v1/deployments/${initial.id}`);
    expect(final.body.labels).toEqual({ [`patcher-${winners[0]!.n}`]: "1" });
    expect(final.body).toEqual(winners[0]!.res.body);
  }, 60_000);
});
