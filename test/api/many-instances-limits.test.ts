// Rate limits and revocation with two real `berth serve` processes on one PostgreSQL database
// behind a round-robin proxy (test/support/api-cluster.ts; docs/design.md §14.2, §14.4, §14.6).
// These instances get their own small quotas, a window that refills slowly enough to count
// exactly, and an auth cache long enough that only the revocation NOTIFY can end a key's use on
// the instance that did not revoke it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApiCluster, type ApiCluster, type ClusterAnswer } from "../support/api-cluster.ts";
import { openSseReader, type SseFrame } from "../support/sse.ts";

const VIEWER_QUOTA = 20;
const STREAMS_PER_KEY = 2;
const REVOKE_BOUND_MS = 5000;

let cluster: ApiCluster;

beforeAll(async () => {
  cluster = await startApiCluster({
    env: {
      BERTH_RATE_LIMIT_VIEWER: String(VIEWER_QUOTA),
      // One token back every 180 s: nothing refills while a test counts.
      BERTH_RATE_LIMIT_WINDOW_SECONDS: "3600",
      BERTH_RATE_LIMIT_STREAMS_PER_KEY: String(STREAMS_PER_KEY),
      BERTH_AUTH_CACHE_SECONDS: "300",
    },
  });
});
afterAll(async () => {
  await cluster?.close();
});

async function createViewerKey(name: string): Promise<{ id: string; token: string }> {
  const created = await cluster.call("POST", "/v1/api-keys", { body: { name, role: "viewer" } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { id: created.body.id, token: created.body.token };
}

/** The `r` (remaining) of a `RateLimit: "<name>";r=<n>;t=<s>` field. */
function remaining(answer: ClusterAnswer): number {
  const field = answer.headers.get("ratelimit") ?? "";
  const match = /;r=(\d+)/.exec(field);
  if (!match) throw new Error(`no RateLimit field with r= in ${JSON.stringify(field)}`);
  return Number(match[1]);
}

const revokedError = (frames: SseFrame[]) =>
  frames.find((f) => f.event === "error" && f.data !== undefined && JSON.parse(f.data).reason === "CredentialRevoked");

describe("rate limits shared by both instances", () => {
  it("one key's bucket is one bucket: its quota is spent across both instances, then both answer 429", async () => {
    const key = await createViewerKey("counted");
    const answers: ClusterAnswer[] = [];
    // Alternate the instances explicitly, so each spends from the bucket in turn.
    for (let i = 0; i < VIEWER_QUOTA + 6; i++) {
      answers.push(await cluster.call("GET", "/v1/projects", { token: key.token, via: i % 2 }));
    }
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.slice(0, VIEWER_QUOTA)).toEqual(Array(VIEWER_QUOTA).fill(200));
    expect(statuses.slice(VIEWER_QUOTA)).toEqual(Array(6).fill(429));
    // Each answer's remaining count is one less than the one before, whichever instance gave it.
    expect(answers.slice(0, VIEWER_QUOTA).map(remaining)).toEqual(Array.from({ length: VIEWER_QUOTA }, (_, i) => VIEWER_QUOTA - 1 - i));
    for (const refused of answers.slice(VIEWER_QUOTA)) {
      expect(refused.headers.get("content-type")).toMatch(/application\/problem\+json/);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(refused.headers.get("ratelimit-policy")).toMatch(new RegExp(`;q=${VIEWER_QUOTA};w=3600`));
      expect(remaining(refused)).toBe(0);
    }
    // Another key's bucket is untouched.
    const other = await createViewerKey("untouched");
    expect((await cluster.call("GET", "/v1/projects", { token: other.token, via: 1 })).status).toBe(200);
  }, 60_000);

  it("the cap on open streams holds per instance, as documented: a third stream on one is refused, the other still takes one", async () => {
    const key = await createViewerKey("streams");
    const controller = new AbortController();
    try {
      const open = (via: number) => cluster.open("/v1/events/stream", { token: key.token, via, signal: controller.signal });
      const held = [await open(0), await open(0)];
      expect(held.map((response) => response.status)).toEqual([200, 200]);
      const refused = await open(0);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ status: 429, open: STREAMS_PER_KEY, limit: STREAMS_PER_KEY });
      const elsewhere = await open(1);
      expect(elsewhere.status).toBe(200);
    } finally {
      controller.abort();
    }
  }, 60_000);
});

describe("revocation reaches the other instance", () => {
  it("a key revoked on A is refused on B, and B's event stream and watch end, within 5 s", async () => {
    const key = await createViewerKey("revoked");
    // B knows the key now and would keep it for BERTH_AUTH_CACHE_SECONDS=300 without a notice.
    expect((await cluster.call("GET", "/v1/projects", { token: key.token, via: 1 })).status).toBe(200);
    const controller = new AbortController();
    try {
      const events = await cluster.open("/v1/events/stream", { token: key.token, via: 1, signal: controller.signal });
      const watch = await cluster.open("/v1/deployments?watch=true", { token: key.token, via: 1, signal: controller.signal });
      expect([events.status, watch.status]).toEqual([200, 200]);
      const readers = [openSseReader(events), openSseReader(watch)];

      const revokedAt = Date.now();
      expect((await cluster.call("DELETE", `/v1/api-keys/${key.id}`, { via: 0 })).status).toBe(204);
      for (const reader of readers) {
        await reader.readUntil((frames) => revokedError(frames) !== undefined, REVOKE_BOUND_MS + 1000);
        expect(revokedError(reader.frames), JSON.stringify(reader.frames)).toBeDefined();
      }
      const refused = await cluster.call("GET", "/v1/projects", { token: key.token, via: 1 });
      expect(refused.status).toBe(401);
      expect(Date.now() - revokedAt).toBeLessThan(REVOKE_BOUND_MS);
    } finally {
      controller.abort();
    }
  }, 60_000);

  it("an agent's long-poll on B ends with 401 within 5 s when its cluster's credentials are revoked on A", async () => {
    const created = await cluster.call("POST", "/v1/clusters", { body: { name: "revoked-agent" } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const registered = await cluster.call("POST", "/v1/agent/register", { token: null, body: { joinToken: created.body.joinToken } });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const agentToken: string = registered.body.token;
    const first = await cluster.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token: agentToken, via: 1 });
    expect(first.status).toBe(200);

    // Nothing changes for this cluster, so only the revocation can end the 30 s wait early.
    const polling = cluster.call("GET", `/v1/agent/desired?since=${first.body.resourceVersion}&waitSeconds=30`, { token: agentToken, via: 1 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const revokedAt = Date.now();
    const revoked = await cluster.call("POST", `/v1/clusters/${created.body.cluster.id}/credentials/revoke`, { via: 0 });
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked).toBe(1);
    const answer = await polling;
    expect(answer.status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(REVOKE_BOUND_MS);
    expect((await cluster.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token: agentToken, via: 1 })).status).toBe(401);
  }, 60_000);
});
