// The API's contracts with two real `berth serve` processes on one PostgreSQL database behind a
// round-robin proxy (test/support/api-cluster.ts): what deploy/api's two replicas must keep.
// The instances start once for the file; a test that kills one starts it again before it ends.
// Each contract is its own describe block, so more can be added beside them.
import { readFileSync } from "node:fs";
import { sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deploymentBody } from "../support/api-harness.ts";
import { startApiCluster, type ApiCluster, type ClusterAnswer } from "../support/api-cluster.ts";
import { openSseReader, type SseFrame } from "../support/sse.ts";
import { preciseNow, startReceiver, type Receiver } from "../webhooks/support/receiver.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const dataFrames = (frames: SseFrame[]) => frames.filter((f) => f.data !== undefined && f.event !== undefined);
const etag = (resourceVersion: number) => `"${resourceVersion}"`;

let cluster: ApiCluster;

beforeAll(async () => {
  cluster = await startApiCluster();
});
afterAll(async () => {
  await cluster?.close();
});

/** Both instances serve: a test that killed one must have started it again. */
function expectBothRunning() {
  expect(cluster.instances.map((instance) => instance.running())).toEqual([true, true]);
}

async function createProject(name: string): Promise<string> {
  const res = await cluster.call("POST", "/v1/projects", { body: { name } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function createKey(role: "viewer" | "editor", projectId: string): Promise<string> {
  const res = await cluster.call("POST", "/v1/api-keys", { body: { name: `${role} key`, role, projectId } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.token;
}

async function createDeployment(name: string, projectId: string, via?: number): Promise<ClusterAnswer> {
  const res = await cluster.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId }), via });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res;
}

describe("the proxy and the instances", () => {
  it("spreads requests over both instances and skips one that refuses connections", async () => {
    const before = [...cluster.proxy.forwarded];
    for (let i = 0; i < 6; i++) expect((await cluster.call("GET", "/v1/projects")).status).toBe(200);
    expect(cluster.proxy.forwarded.map((n, i) => n - before[i]!)).toEqual([3, 3]);

    await cluster.instances[1]!.kill();
    try {
      for (let i = 0; i < 4; i++) expect((await cluster.call("GET", "/v1/projects")).status).toBe(200);
      // A request pinned to the dead instance is not moved: the proxy says so.
      expect((await cluster.call("GET", "/v1/projects", { via: 1 })).status).toBe(502);
    } finally {
      await cluster.instances[1]!.start();
    }
    expect((await cluster.call("GET", "/v1/projects", { via: 1 })).status).toBe(200);
    expectBothRunning();
  }, 60_000);
});

describe("reads on one instance see writes on the other", () => {
  it("a deployment created on A is on B at once, with the same ETag, in lists too; B's write is A's next read", async () => {
    const project = await createProject("consistency");
    for (let i = 0; i < 5; i++) {
      const created = await createDeployment(`seen-${i}`, project, i % 2);
      const other = (i + 1) % 2;
      const read = await cluster.call("GET", `/v1/deployments/${created.body.id}`, { via: other });
      expect(read.status).toBe(200);
      expect(read.body).toEqual(created.body);
      expect(read.headers.get("etag")).toBe(created.headers.get("etag"));
      expect(read.headers.get("etag")).toBe(etag(created.body.resourceVersion));
      const listed = await cluster.call("GET", `/v1/deployments?projectId=${project}&limit=200`, { via: other });
      expect(listed.body.items.map((d: { name: string }) => d.name)).toContain(`seen-${i}`);
      expect(listed.body.items.find((d: { id: string }) => d.id === created.body.id)).toEqual(created.body);

      const patched = await cluster.call("PATCH", `/v1/deployments/${created.body.id}`, {
        via: other,
        body: { labels: { seen: "yes" } },
        headers: { "If-Match": created.headers.get("etag")! },
      });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      const back = await cluster.call("GET", `/v1/deployments/${created.body.id}`, { via: i % 2 });
      expect(back.body).toEqual(patched.body);
      expect(back.headers.get("etag")).toBe(patched.headers.get("etag"));
    }
    const names = (await cluster.call("GET", `/v1/deployments?projectId=${project}&limit=200`, { via: 0 })).body.items.map((d: { name: string }) => d.name);
    expect(names.sort()).toEqual(["seen-0", "seen-1", "seen-2", "seen-3", "seen-4"]);
  }, 60_000);
});

describe("Idempotency-Key across instances", () => {
  let project: string;
  beforeAll(async () => {
    project = await createProject("idempotency");
  });

  const post = (path: string, key: string, body: unknown, via?: number) =>
    cluster.call("POST", path, { body, via, headers: { "Idempotency-Key": key } });

  it("sequentially, through both instances: one deployment, every answer the first one, replays marked", async () => {
    const key = `seq-${crypto.randomUUID()}`;
    const body = deploymentBody("idem-sequential", { projectId: project });
    const first = await post("/v1/deployments", key, body, 0);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    for (let i = 1; i <= 4; i++) {
      const again = await post("/v1/deployments", key, body, i % 2);
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.body).toEqual(first.body);
      expect(again.headers.get("location")).toBe(first.headers.get("location"));
      expect(again.headers.get("etag")).toBe(first.headers.get("etag"));
    }
    const listed = await cluster.call("GET", `/v1/deployments?projectId=${project}&limit=200`);
    expect(listed.body.items.filter((d: { name: string }) => d.name === "idem-sequential")).toHaveLength(1);

    // The same key with another body, on either instance: 422, and still one deployment.
    for (const via of [0, 1]) {
      const other = await post("/v1/deployments", key, deploymentBody("idem-other-body", { projectId: project }), via);
      expect(other.status, JSON.stringify(other.body)).toBe(422);
      expect(other.headers.get("content-type")).toContain("application/problem+json");
      expect(other.body.type).toMatch(/idempotency-key-reused$/);
    }
    const after = await cluster.call("GET", `/v1/deployments?projectId=${project}&limit=200`);
    expect(after.body.items.map((d: { name: string }) => d.name)).not.toContain("idem-other-body");
  }, 60_000);

  // Webhook endpoints have no unique name, so a second create would really be a second
  // endpoint: only the key can stop it.
  it("concurrently, 16 at once over both instances: exactly one endpoint, the rest replays or 409 in flight", async () => {
    const receiver = await startReceiver();
    try {
      for (let round = 0; round < 3; round++) {
        const key = `conc-${round}-${crypto.randomUUID()}`;
        const url = `${receiver.url}?round=${round}`;
        const body = { url, eventTypes: ["deployment.deleted"], projectId: project };
        const answers = await Promise.all(Array.from({ length: 16 }, (_, n) => post("/v1/webhooks", key, body, n % 2)));
        const statuses = answers.map((a) => a.status);
        expect(statuses.every((s) => s === 201 || s === 409), JSON.stringify(statuses)).toBe(true);
        for (const conflict of answers.filter((a) => a.status === 409)) expect(conflict.body.type).toMatch(/idempotency-key-in-flight$/);
        const successes = answers.filter((a) => a.status === 201);
        const originals = successes.filter((a) => a.headers.get("idempotent-replayed") === null);
        expect(originals).toHaveLength(1);
        for (const replay of successes) {
          expect(replay.body).toEqual(originals[0]!.body);
          expect(replay.headers.get("location")).toBe(originals[0]!.headers.get("location"));
        }
        // A late retry is a replay of the same endpoint, on both instances.
        for (const via of [0, 1]) {
          const late = await post("/v1/webhooks", key, body, via);
          expect(late.status).toBe(201);
          expect(late.headers.get("idempotent-replayed")).toBe("true");
          expect(late.body).toEqual(originals[0]!.body);
        }
        const endpoints = await cluster.call("GET", `/v1/webhooks?projectId=${project}&limit=200`);
        expect(endpoints.body.items.filter((w: { url: string }) => w.url === url)).toHaveLength(1);
      }
    } finally {
      await receiver.close();
    }
  }, 60_000);
});

describe("If-Match: 32 writers over both instances", () => {
  const WRITERS = 32;
  const ROUNDS = 4;

  it("exactly one of 32 PATCHes with one If-Match wins each round; the rest get 412; the final state is the winners' changes", async () => {
    const project = await createProject("if-match-race");
    const created = await createDeployment("raced", project);
    let current = created.body;
    let currentETag = created.headers.get("etag")!;
    const winners: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const labels = (writer: number) => ({ ...current.labels, [`round-${round}`]: `writer-${writer}` });
      // Sent in a shuffled order, so that either instance may take the row first.
      const order = Array.from({ length: WRITERS }, (_, writer) => writer).sort(() => Math.random() - 0.5);
      const answers: ClusterAnswer[] = new Array(WRITERS);
      await Promise.all(
        order.map(async (writer) => {
          answers[writer] = await cluster.call("PATCH", `/v1/deployments/${created.body.id}`, {
            via: writer % 2,
            body: { labels: labels(writer) },
            headers: { "If-Match": currentETag },
          });
        }),
      );
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 200), JSON.stringify(statuses)).toHaveLength(1);
      expect(statuses.filter((s) => s === 412)).toHaveLength(WRITERS - 1);
      const winner = statuses.indexOf(200);
      const won = answers[winner]!;
      winners.push(winner);
      expect(won.body.labels).toEqual(labels(winner));
      expect(won.body.resourceVersion).toBeGreaterThan(current.resourceVersion);
      expect(won.headers.get("etag")).toBe(etag(won.body.resourceVersion));
      for (const lost of answers.filter((a) => a.status === 412)) {
        expect(lost.body.type).toMatch(/precondition-failed$/);
        // The loser is told the version that beat it, whichever instance it asked.
        expect(lost.body.currentETag).toBe(won.headers.get("etag"));
        expect(lost.headers.get("etag")).toBe(won.headers.get("etag"));
      }
      // Both instances read the winner's write.
      for (const via of [0, 1]) {
        const read = await cluster.call("GET", `/v1/deployments/${created.body.id}`, { via });
        expect(read.body).toEqual(won.body);
      }
      current = won.body;
      currentETag = won.headers.get("etag")!;
    }
    const final = await cluster.call("GET", `/v1/deployments/${created.body.id}`);
    expect(final.body.labels).toEqual(Object.fromEntries(winners.map((w, round) => [`round-${round}`, `writer-${w}`])));
    // Labels are not spec: the generation stays, the resourceVersion moved once per round.
    expect(final.body.generation).toBe(created.body.generation);
    expect(final.body.resourceVersion).toBe(current.resourceVersion);
    console.log(`If-Match race, ${ROUNDS} rounds of ${WRITERS}: winners ${winners.join(", ")} (even = instance 0)`);
  }, 90_000);
});

describe("webhook delivery while an instance is killed", () => {
  let receiver: Receiver;
  afterAll(async () => {
    await receiver?.close();
  });

  it("every event arrives at least once, signed, duplicates under one webhook-id, after a SIGKILL mid-delivery", async () => {
    // A slow receiver, so the killed instance surely holds deliveries in flight.
    receiver = await startReceiver(() => ({ status: 204, delayMs: 300 }));
    const project = await createProject("webhook-kills");
    const endpoint = await cluster.call("POST", "/v1/webhooks", {
      body: { url: receiver.url, eventTypes: ["deployment.created"], projectId: project },
    });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const secret = endpoint.body.secret as string;

    // Each instance in turn is killed while deliveries are in flight (the receiver has just
    // got a request and answers 300 ms later), events go on through the other, and it restarts.
    const BURST = 16;
    const WHILE_DOWN = 6;
    let written = 0;
    const killedAt: number[] = [];
    for (const victim of cluster.instances) {
      // At once, so that the sends overlap and some are surely under way at the kill.
      const arrived = receiver.received.length;
      await Promise.all(Array.from({ length: BURST }, (_, i) => createDeployment(`hook-${written + i}`, project, i % 2)));
      written += BURST;
      await receiver.waitFor(arrived + 2, 15_000);
      killedAt.push(preciseNow());
      await victim.kill();
      try {
        const other = (victim.index + 1) % cluster.instances.length;
        for (let i = 0; i < WHILE_DOWN; i++, written++) await createDeployment(`hook-${written}`, project, other);
      } finally {
        await victim.start();
      }
    }
    expectBothRunning();

    const events = await cluster.call("GET", `/v1/events?type=deployment.created&limit=500`);
    const expected = events.body.items
      .filter((e: { projectId: string }) => e.projectId === project)
      .map((e: { id: string }) => e.id) as string[];
    expect(expected).toHaveLength(written);

    // Bounded: the lease (8 s here) returns what the dead instance held; then all arrive.
    const deadline = Date.now() + 60_000;
    // Delivered = received and answered: a request cut by a kill does not count.
    const seen = () => new Set(receiver.received.filter((r) => !receiver.cut.includes(r)).map((r) => r.headers["webhook-id"]));
    while (Date.now() < deadline && !expected.every((id) => seen().has(id))) await sleep(100);
    expect(expected.filter((id) => !seen().has(id))).toEqual([]);

    const byId = new Map<string, string[]>();
    for (const request of receiver.received) {
      const payload = new Webhook(secret).verify(request.body, request.headers) as { type: string; data: { deployment: { name: string } } };
      expect(payload.type).toBe("deployment.created");
      const id = request.headers["webhook-id"]!;
      byId.set(id, [...(byId.get(id) ?? []), request.body]);
    }
    // Nothing but these events, and a duplicate is the same event under the same webhook-id.
    expect([...byId.keys()].sort()).toEqual([...expected].sort());
    for (const bodies of byId.values()) expect(new Set(bodies).size).toBe(1);
    // A send cut by a kill was never recorded, so it was sent again once its lease ran out.
    for (const request of receiver.cut) expect(byId.get(request.headers["webhook-id"]!)!.length).toBeGreaterThanOrEqual(2);
    // Live instances never send twice: every duplicate is of a send that was under way
    // (received, not yet recorded) when an instance died.
    const log = await cluster.call("GET", `/v1/webhooks/${endpoint.body.id}/deliveries?limit=200`);
    for (const [id, bodies] of byId) {
      if (bodies.length < 2) continue;
      const requests = receiver.received.filter((r) => r.headers["webhook-id"] === id);
      const explained = killedAt.some((at) => requests[0]!.at <= at && at - requests[0]!.at < 5000);
      // On failure: when each copy arrived (ms after the first kill) and what the dispatchers recorded.
      const story = JSON.stringify({
        arrivals: requests.map((r) => Math.round(r.at - killedAt[0]!)),
        kills: killedAt.map((at) => Math.round(at - killedAt[0]!)),
        recorded: log.body.items?.find((d: { eventId?: string }) => d.eventId === id),
      });
      expect(explained, `duplicate ${id} not explained by a kill: ${story}`).toBe(true);
    }
    const duplicates = receiver.received.length - byId.size;
    console.log(
      `webhooks across 2 SIGKILLs: ${expected.length} events, ${receiver.received.length} requests, ` +
        `${receiver.cut.length} cut by a kill, ${duplicates} duplicates`,
    );
    // The kills did hit deliveries in flight (otherwise this test proved nothing about them):
    // cut before the answer, or answered but not yet recorded (then sent again: a duplicate).
    expect(receiver.cut.length + duplicates).toBeGreaterThanOrEqual(1);
  }, 90_000);
});

describe("streams resume on the other instance", () => {
  /**
   * Opens `path` on instance 0, writes `total` changes through instance 1 (`write(i)` returns the
   * id the stream must show for it), kills instance 0 once `killAfter` have been read, then
   * resumes through the proxy with Last-Event-ID: every id once, in order.
   */
  async function resumeAcrossKill(path: string, token: string, write: (i: number) => Promise<string>, total: number, killAfter: number) {
    const first = await cluster.open(path, { via: 0, token });
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toContain("text/event-stream");
    const before = openSseReader(first);
    const written: string[] = [];
    const victim = cluster.instances[0]!;
    let resumedFrames: SseFrame[] = [];
    try {
      let i = 0;
      for (; i < killAfter; i++) written.push(await write(i));
      await before.readUntil((frames) => dataFrames(frames).length >= killAfter, 10_000);
      await victim.kill();
      await before.readUntil(() => false, 5000).catch(() => undefined);
      expect(before.closed(), "the stream of the killed instance is cut").toBeDefined();
      for (; i < total; i++) written.push(await write(i));
      const seenBefore = dataFrames(before.frames);
      const lastId = seenBefore[seenBefore.length - 1]!.id!;
      // Through the proxy, unpinned: instance 0 refuses connections, so instance 1 answers.
      const resumed = await cluster.open(path, { token, headers: { "Last-Event-ID": lastId } });
      expect(resumed.status).toBe(200);
      const after = openSseReader(resumed);
      await after.readUntil((frames) => seenBefore.length + dataFrames(frames).length >= total, 10_000);
      // Nothing more than expected arrives a little later either.
      await sleep(700);
      await after.cancel();
      resumedFrames = dataFrames(after.frames);
      const ids = [...seenBefore, ...resumedFrames].map((f) => f.id!);
      expect(ids).toEqual(written);
      expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((a, b) => a - b));
      return { before: seenBefore, after: resumedFrames };
    } finally {
      await before.cancel();
      if (!victim.running()) await victim.start();
    }
  }

  it("GET /v1/events/stream: no gap, no duplicate, order kept", async () => {
    const project = await createProject("sse-events");
    const viewer = await createKey("viewer", project);
    const TOTAL = 16;
    const { before, after } = await resumeAcrossKill(
      "/v1/events/stream?after=0",
      viewer,
      async (i) => {
        await createDeployment(`ev-${i}`, project, 1);
        const events = await cluster.call("GET", "/v1/events?limit=500", { token: viewer, via: 1 });
        return String(events.body.items[events.body.items.length - 1].seq);
      },
      TOTAL,
      6,
    );
    const names = [...before, ...after].map((f) => JSON.parse(f.data!).data.deployment.name);
    expect(names).toEqual(Array.from({ length: TOTAL }, (_, i) => `ev-${i}`));
    expectBothRunning();
  }, 90_000);

  it("GET /v1/deployments?watch=true: no gap, no duplicate, order kept", async () => {
    const project = await createProject("sse-watch");
    const TOTAL = 12;
    const { before, after } = await resumeAcrossKill(
      `/v1/deployments?watch=true&projectId=${project}`,
      cluster.adminToken,
      async (i) => String((await createDeployment(`w-${i}`, project, 1)).body.resourceVersion),
      TOTAL,
      5,
    );
    const notices = [...before, ...after].map((f) => JSON.parse(f.data!));
    expect(notices.map((n) => [n.type, n.object.name])).toEqual(Array.from({ length: TOTAL }, (_, i) => ["ADDED", `w-${i}`]));
    expectBothRunning();
  }, 90_000);
});

describe("BERTH_MIGRATE=true on every instance, started at once on an empty database", () => {
  let fresh: ApiCluster;
  beforeAll(async () => {
    // Three, so that at least two race for the schema (before the migration lock, all but one died).
    fresh = await startApiCluster({ instances: 3, migrate: true, database: "empty" });
  });
  afterAll(async () => {
    await fresh?.close();
  });

  it("all come up; the migrations ran once; one default project; the API works through any of them", async () => {
    expect(fresh.instances.map((instance) => instance.running())).toEqual([true, true, true]);
    const journal = JSON.parse(readFileSync(new URL("../../db/migrations/meta/_journal.json", import.meta.url), "utf8"));
    const applied = (await fresh.database.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`)) as unknown as {
      rows: Array<{ n: number }>;
    };
    expect(applied.rows[0]!.n).toBe(journal.entries.length);
    const projects = await fresh.call("GET", "/v1/projects");
    expect(projects.body.items.filter((p: { name: string }) => p.name === "default")).toHaveLength(1);
    for (const via of [0, 1, 2]) {
      const created = await fresh.call("POST", "/v1/deployments", { via, body: deploymentBody(`fresh-${via}`, { projectId: fresh.defaultProjectId }) });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
  }, 60_000);
});
