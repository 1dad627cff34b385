// Rate limits and caps (docs/design.md §14.2): token buckets per key by role, per agent
// credential and per client address, shared through the database; the RateLimit headers;
// caps on open streams and long-polls per key; the webhook endpoint cap per project.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/api/app.ts";
import { parseCidrList } from "../../src/domain/client-address.ts";
import { DEFAULT_APP_CONFIG, type AppConfig } from "../../src/services/context.ts";
import { DEFAULT_RATE_LIMITS, type RateLimitConfig } from "../../src/services/rate-limits/config.ts";
import { RequestLimiter } from "../../src/services/rate-limits/request-limiter.ts";
import type { WebhookTransport } from "../../src/services/webhooks/transport.ts";
import { ADMIN_TOKEN, createTestApi, silentLogger, type TestApi } from "../support/api-harness.ts";
import { startBerthServer, type BerthServer } from "../support/berth-process.ts";
import { DRIVERS, openTestDatabase } from "../support/databases.ts";
import { readSse } from "../support/sse.ts";

// One token per 12 s for a viewer (5 a minute), so the clock decides every refill.
const LIMITS: RateLimitConfig = {
  ...DEFAULT_RATE_LIMITS,
  windowSeconds: 60,
  quotas: { viewer: 5, editor: 8, admin: 1000, agent: 6, address: 4 },
  streamsPerKey: 2,
  longPollsPerKey: 1,
  webhooksPerProject: 2,
  trustedProxies: parseCidrList("10.0.0.0/8"),
};

const offlineTransport: WebhookTransport = {
  resolve: async () => ["93.184.216.34"],
  send: async () => ({ status: 204, headers: {}, bodySnippet: "", latencyMs: 1 }),
};

/** Every in-process request comes through one trusted proxy; X-Forwarded-For says who the client is. */
const PROXY = "10.0.0.1";

describe.each(DRIVERS)("rate limits on %s", (driver) => {
  let api: TestApi;
  let project: string;

  beforeAll(async () => {
    api = await createTestApi(driver, { rateLimits: LIMITS, streamPollMs: 20 }, { peerAddress: () => PROXY, webhookTransport: offlineTransport });
    project = await api.createProject(`limits-${driver}`);
  });
  afterAll(async () => {
    await api?.close();
  });

  const from = (client: string) => ({ "X-Forwarded-For": client });

  it("sends RateLimit-Policy and RateLimit on a 2xx, counting down", async () => {
    const viewer = await api.createKey("viewer", project);
    const first = await api.call("GET", "/v1/projects", { token: viewer });
    expect(first.status).toBe(200);
    expect(first.headers.get("RateLimit-Policy")).toBe('"viewer";q=5;w=60');
    expect(first.headers.get("RateLimit")).toBe('"viewer";r=4;t=12');
    const second = await api.call("GET", "/v1/projects", { token: viewer });
    expect(second.headers.get("RateLimit")).toBe('"viewer";r=3;t=24');
  });

  it("answers a burst over the bucket with 429, Retry-After and the headers, then refills with the clock", async () => {
    const viewer = await api.createKey("viewer", project);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await api.call("GET", "/v1/deployments", { token: viewer })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);

    const refused = await api.call("GET", "/v1/deployments", { token: viewer });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("content-type")).toContain("application/problem+json");
    expect(refused.headers.get("Retry-After")).toBe("12");
    expect(refused.headers.get("RateLimit-Policy")).toBe('"viewer";q=5;w=60');
    expect(refused.headers.get("RateLimit")).toBe('"viewer";r=0;t=60');
    expect(refused.body).toMatchObject({
      type: "https://berth.dev/problems/rate-limited",
      status: 429,
      policy: "viewer",
      limit: 5,
      windowSeconds: 60,
      retryAfterSeconds: 12,
    });
    expect(refused.body.detail).toMatch(/"viewer" rate limit \(5 requests per 60 s\).*retry after 12 s/);

    api.clock.advance(6_000);
    const halfway = await api.call("GET", "/v1/deployments", { token: viewer });
    expect(halfway.status).toBe(429);
    expect(halfway.headers.get("Retry-After")).toBe("6");

    api.clock.advance(6_000);
    expect((await api.call("GET", "/v1/deployments", { token: viewer })).status).toBe(200);
    expect((await api.call("GET", "/v1/deployments", { token: viewer })).status).toBe(429);
  });

  it("gives each key its own bucket, sized by its role; agents get theirs per credential", async () => {
    const viewer = await api.createKey("viewer", project);
    const otherViewer = await api.createKey("viewer", project);
    const editor = await api.createKey("editor", project);
    for (let i = 0; i < 5; i++) expect((await api.call("GET", "/v1/projects", { token: viewer })).status).toBe(200);
    expect((await api.call("GET", "/v1/projects", { token: viewer })).status).toBe(429);

    expect((await api.call("GET", "/v1/projects", { token: otherViewer })).status).toBe(200);
    const asEditor = await api.call("GET", "/v1/projects", { token: editor });
    expect(asEditor.status).toBe(200);
    expect(asEditor.headers.get("RateLimit-Policy")).toBe('"editor";q=8;w=60');
    const asAdmin = await api.call("GET", "/v1/projects");
    expect(asAdmin.headers.get("RateLimit-Policy")).toBe('"admin";q=1000;w=60');

    const agent = await api.createAgent(`limits-${driver}`);
    const other = await api.createAgent(`limits-other-${driver}`);
    const desired = (token: string) => api.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token });
    for (let i = 0; i < 6; i++) expect((await desired(agent.token)).status).toBe(200);
    const refused = await desired(agent.token);
    expect(refused.status).toBe(429);
    expect(refused.body.policy).toBe("agent");
    expect((await desired(other.token)).status).toBe(200);
  });

  it("limits missing and bad tokens per client address, and never health probes", async () => {
    const client = "198.51.100.7";
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const token = i % 2 === 0 ? `bp_not-a-key-${i}` : null;
      statuses.push((await api.call("GET", "/v1/projects", { token, headers: from(client) })).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401]);
    const refused = await api.call("GET", "/v1/projects", { token: "bp_not-a-key-0", headers: from(client) });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("RateLimit-Policy")).toBe('"address";q=4;w=60');
    expect(refused.body.policy).toBe("address");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);

    // Another client is not punished for the first one, and a good key from the same client still works.
    expect((await api.call("GET", "/v1/projects", { token: "bp_nope", headers: from("198.51.100.8") })).status).toBe(401);
    expect((await api.call("GET", "/v1/projects", { headers: from(client) })).status).toBe(200);
    // Left of the client's own address is the client's claim, and is not believed.
    expect((await api.call("GET", "/v1/projects", { token: null, headers: from(`203.0.113.1, ${client}`) })).status).toBe(429);

    const health = await api.app.request("/healthz", { headers: from(client) });
    expect(health.status).toBe(200);
    expect(health.headers.get("RateLimit")).toBeNull();
    expect((await api.app.request("/readyz", { headers: from(client) })).status).toBe(200);
  });

  it("shares buckets between API instances on one database", async () => {
    const viewer = await api.createKey("viewer", project);
    const second = createApp({
      db: api.database.db,
      clock: api.clock,
      config: { ...DEFAULT_APP_CONFIG, adminToken: ADMIN_TOKEN, rateLimits: LIMITS },
      logger: silentLogger,
      checkDatabase: () => api.database.ping(),
    });
    const onSecond = () => second.request("/v1/projects", { headers: { Authorization: `Bearer ${viewer}` } });
    for (let i = 0; i < 3; i++) expect((await api.call("GET", "/v1/projects", { token: viewer })).status).toBe(200);
    expect((await onSecond()).status).toBe(200);
    expect((await onSecond()).status).toBe(200);
    expect((await onSecond()).status).toBe(429);
    expect((await api.call("GET", "/v1/projects", { token: viewer })).status).toBe(429);
  });

  it("caps open event streams per key: the third is refused until one closes", async () => {
    api.clock.advance(60_000);
    const editor = await api.createKey("editor", project);
    const open = (path: string) => api.app.request(path, { headers: { Authorization: `Bearer ${editor}` } });
    const first = await open("/v1/events/stream");
    const second = await open("/v1/deployments?watch=true");
    expect([first.status, second.status]).toEqual([200, 200]);

    const third = await open("/v1/events/stream");
    expect(third.status).toBe(429);
    const problem = await third.json();
    expect(problem).toMatchObject({ type: "https://berth.dev/problems/too-many-open", open: 2, limit: 2 });
    expect(problem.detail).toMatch(/2 event streams open.*cap \(2\)/);
    expect(third.headers.get("Retry-After")).toBe("1");

    await readSse(first, (frames) => frames.length >= 1); // reads the retry frame, then cancels the stream
    const fourth = await open("/v1/events/stream");
    expect(fourth.status).toBe(200);
    await fourth.body!.cancel();
    await second.body!.cancel();
  });

  it("caps open long-polls per agent credential and frees the slot when the poll is aborted", async () => {
    const agent = await api.createAgent(`poller-${driver}`);
    api.clock.advance(60_000);
    const headers = { Authorization: `Bearer ${agent.token}` };
    const now = await api.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token: agent.token });
    const since = now.body.resourceVersion;

    const aborting = new AbortController();
    // The poll that should hold the slot. Should it answer before the second call is refused (a
    // change to report, or a refusal of its own on a busy machine), another one takes its place:
    // what is tested is that a second poll is refused while one is open.
    let waiting: Promise<Response> | Response = Promise.resolve(new Response());
    let waitingOpen = false;
    const openPoll = () => {
      waitingOpen = true;
      waiting = Promise.resolve(api.app.request(`/v1/agent/desired?since=${since}&waitSeconds=30`, { headers, signal: aborting.signal })).finally(() => {
        waitingOpen = false;
      });
    };
    openPoll();
    // The first poll holds its slot once it has passed authentication; until then a second may still get in
    // (on a busy machine that can take seconds: Neon's connection goes through a WebSocket proxy).
    let second = await api.call("GET", `/v1/agent/desired?since=${since}&waitSeconds=0`, { token: agent.token });
    const giveUpAt = Date.now() + 15_000;
    for (let i = 0; i < 500 && second.status === 200 && Date.now() < giveUpAt; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (!waitingOpen) openPoll();
      api.clock.advance(10_000); // one more token of the agent's bucket per try: this is about the slot
      second = await api.call("GET", `/v1/agent/desired?since=${since}&waitSeconds=0`, { token: agent.token });
    }
    expect(second.status).toBe(429);
    expect(second.body).toMatchObject({ type: "https://berth.dev/problems/too-many-open", open: 1, limit: 1 });

    aborting.abort();
    await Promise.resolve(waiting).catch(() => undefined);
    const third = await api.call("GET", `/v1/agent/desired?since=${since}&waitSeconds=0`, { token: agent.token });
    expect(third.status).toBe(200);
  });

  it("caps webhook endpoints per project at create, naming the cap", async () => {
    const target = await api.createProject(`hooks-${driver}`);
    const create = (projectId: string) =>
      api.call("POST", "/v1/webhooks", { body: { projectId, url: "https://hooks.example.com/b", eventTypes: ["*"] } });
    expect((await create(target)).status).toBe(201);
    expect((await create(target)).status).toBe(201);
    const third = await create(target);
    expect(third.status).toBe(409);
    expect(third.body).toMatchObject({ type: "https://berth.dev/problems/limit-reached", count: 2, limit: 2 });
    expect(third.body.detail).toMatch(/already 2 webhook endpoints in project.*cap \(2/);
    const listed = await api.call("GET", `/v1/webhooks?projectId=${target}`);
    expect(listed.body.items).toHaveLength(2);

    // Racing creates cannot pass the cap together.
    const raced = await api.createProject(`hooks-race-${driver}`);
    const answers = await Promise.all(Array.from({ length: 5 }, () => create(raced)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 409, 409, 409]);
  });
});

describe.each(["pglite", "postgres"] as const)("rate limiting turned off on %s", (driver) => {
  let api: TestApi;
  beforeAll(async () => {
    const rateLimits: RateLimitConfig = { ...LIMITS, enabled: false };
    api = await createTestApi(driver, { rateLimits } satisfies Partial<AppConfig>);
  });
  afterAll(async () => {
    await api?.close();
  });

  it("sends no headers and refuses nothing", async () => {
    const viewer = await api.createKey("viewer");
    for (let i = 0; i < 8; i++) {
      const answer = await api.call("GET", "/v1/projects", { token: viewer });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("RateLimit")).toBeNull();
    }
  });
});

describe("the limiter's own memory", () => {
  // Any use of this database fails the test: what the limiter answers here, it answers from memory.
  const noDatabase = new Proxy({}, { get: () => { throw new Error("the database was used"); } }) as never;

  it("refuses a bucket that just refused without asking the database, until its next token is due", async () => {
    const database = await openTestDatabase("pglite");
    try {
      const limiter = new RequestLimiter({ ...LIMITS, quotas: { ...LIMITS.quotas, address: 1 } }); // one token a minute
      expect((await limiter.take(database.db, "address", "198.51.100.9", new Date(0))).allowed).toBe(true);
      expect((await limiter.take(database.db, "address", "198.51.100.9", new Date(1_000))).allowed).toBe(false);
      const fromMemory = await limiter.take(noDatabase, "address", "198.51.100.9", new Date(30_000));
      expect(fromMemory).toMatchObject({ allowed: false, retryAfterSeconds: 30 });
      // Once the token is due the database decides again.
      await expect(limiter.take(noDatabase, "address", "198.51.100.9", new Date(60_000))).rejects.toThrow(/database was used/);
      expect((await limiter.take(database.db, "address", "198.51.100.9", new Date(60_000))).allowed).toBe(true);
    } finally {
      await database.close();
    }
  });

  it("remembers a failed token for the configured seconds only", () => {
    const limiter = new RequestLimiter({ ...LIMITS, failedAuthCacheSeconds: 10 });
    limiter.noteFailed("bp_bad", new Date(0));
    expect(limiter.recentlyFailed("bp_bad", new Date(9_999))).toBe(true);
    expect(limiter.recentlyFailed("bp_bad", new Date(10_000))).toBe(false);
    expect(limiter.recentlyFailed("bp_other", new Date(0))).toBe(false);
  });
});

describe("the Node entry on a real socket", () => {
  let server: BerthServer;
  beforeAll(async () => {
    server = await startBerthServer({ BERTH_RATE_LIMIT_ADDRESS: "2", BERTH_TRUSTED_PROXIES: "127.0.0.1/32" });
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });

  const get = (headers: Record<string, string>) => fetch(`${server.url}/v1/projects`, { headers });

  it("believes X-Forwarded-For only from the trusted loopback peer, and limits per forwarded address", async () => {
    const first = await get({ "X-Forwarded-For": "198.51.100.20" });
    expect(first.status).toBe(401);
    expect(first.headers.get("RateLimit")).toBe('"address";r=1;t=30');
    expect((await get({ "X-Forwarded-For": "198.51.100.20" })).status).toBe(401);
    const refused = await get({ "X-Forwarded-For": "198.51.100.20" });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect((await get({ "X-Forwarded-For": "198.51.100.21" })).status).toBe(401);
    const keyed = await get({ Authorization: `Bearer ${server.adminToken}`, "X-Forwarded-For": "198.51.100.20" });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get("RateLimit-Policy")).toBe('"admin";q=2400;w=60');
  });
});
