// Secrets and `berth serve` as a real process (docs/design.md §14.3): the server key is
// generated into a PGlite data directory (0600) and kept across restarts, a PostgreSQL start
// without one refuses and says how to make one, and — through traffic that creates every kind
// of credential and includes refusals and forced 5xx errors — no log line carries a token, a
// secret, or the hash the database is queried with.
import { statSync } from "node:fs";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/domain/ids.ts";
import { SECRET_KEY_FILE } from "../../src/api/start.ts";
import { runBerth, startBerthServer, type BerthServer } from "../support/berth-process.ts";
import { openTestDatabase, type TestDatabase } from "../support/databases.ts";
import { TEST_SECRET_KEY } from "../support/secret-key.ts";

async function call(server: BerthServer, method: string, path: string, options: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}) {
  const token = options.token === undefined ? server.adminToken : options.token;
  const res = await fetch(server.url + path, {
    method,
    headers: {
      ...(token === null ? {} : { Authorization: `Bearer ${token}` }),
      ...(options.body === undefined ? {} : { "Content-Type": "application/json" }),
      ...options.headers,
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe("the server key of a PGlite installation", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "berth-key-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("is generated once into the data directory (0600), logged, and used again after a restart", async () => {
    const env = { BERTH_SECRET_KEY: "", BERTH_WEBHOOK_ALLOW_PRIVATE: "true", BERTH_WEBHOOK_ALLOW_HTTP: "true" };
    const first = await startBerthServer(env, { dataDir });
    let webhookId: string;
    try {
      expect(first.output().stdout).toMatch(/generated a server key into the data directory/);
      const file = join(dataDir, SECRET_KEY_FILE);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(Buffer.from(readFileSync(file, "utf8").trim(), "base64")).toHaveLength(32);
      const created = await call(first, "POST", "/v1/webhooks", { body: { url: "http://127.0.0.1:9/hook", eventTypes: ["deployment.updated"] } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      webhookId = created.body.id;
    } finally {
      await first.stop();
    }
    const keyBefore = readFileSync(join(dataDir, SECRET_KEY_FILE), "utf8");
    const second = await startBerthServer(env, { dataDir });
    try {
      expect(second.output().stdout).not.toMatch(/generated a server key/);
      expect(readFileSync(join(dataDir, SECRET_KEY_FILE), "utf8")).toBe(keyBefore);
      // Rotating opens the stored secret: it works only with the key from the first start.
      const rotated = await call(second, "POST", `/v1/webhooks/${webhookId!}/rotate-secret`);
      expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    } finally {
      await second.stop();
    }
  }, 120_000);
});

describe("`berth serve` on PostgreSQL", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase("postgres", { poolSize: 2 });
  });
  afterAll(async () => {
    await database?.close();
  });

  it.each([
    [{ BERTH_SECRET_KEY: "" }, /BERTH_SECRET_KEY is required with a postgres database[\s\S]*openssl rand -base64 32/],
    [{ BERTH_SECRET_KEY: "c2hvcnQ=" }, /BERTH_SECRET_KEY: must decode to 32 bytes, not 5/],
    [{ BERTH_SECRET_KEY: TEST_SECRET_KEY, BERTH_SECRET_KEYS_PREVIOUS: "nope!" }, /BERTH_SECRET_KEYS_PREVIOUS: must be base64/],
  ])("refuses to start without a usable key: %o", async (env, message) => {
    const dir = mkdtempSync(join(tmpdir(), "berth-nokey-"));
    try {
      const result = await runBerth(["serve"], { ...env, DATABASE_URL: database.url, PORT: "0", BERTH_DATA_DIR: dir }, { timeoutMs: 60_000 });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it("logs no token, secret or SQL parameter, through successes, refusals and 5xx errors", async () => {
    const server = await startBerthServer({ DATABASE_URL: database.url, BERTH_SECRET_KEY: TEST_SECRET_KEY, BERTH_WEBHOOK_ALLOW_PRIVATE: "true", BERTH_WEBHOOK_ALLOW_HTTP: "true" });
    const secrets: string[] = [server.adminToken];
    try {
      const key = await call(server, "POST", "/v1/api-keys", { body: { name: "logs", role: "admin" }, headers: { "Idempotency-Key": "logs-1" } });
      expect(key.status, JSON.stringify(key.body)).toBe(201);
      const replay = await call(server, "POST", "/v1/api-keys", { body: { name: "logs", role: "admin" }, headers: { "Idempotency-Key": "logs-1" } });
      expect(replay.body.token).toBe(key.body.token);
      secrets.push(key.body.token);
      const cluster = await call(server, "POST", "/v1/clusters", { body: { name: "logs" } });
      expect(cluster.status).toBe(201);
      secrets.push(cluster.body.joinToken);
      const agent = await call(server, "POST", "/v1/agent/register", { token: null, body: { joinToken: cluster.body.joinToken } });
      expect(agent.status).toBe(201);
      secrets.push(agent.body.token);
      // A join token is single-use: its second use is refused (4xx).
      expect((await call(server, "POST", "/v1/agent/register", { token: null, body: { joinToken: cluster.body.joinToken } })).status).toBeGreaterThanOrEqual(400);
      expect((await call(server, "POST", "/v1/agent/heartbeat", { token: agent.body.token, body: {} })).status).toBeLessThan(500);
      const webhook = await call(server, "POST", "/v1/webhooks", { token: key.body.token, body: { url: "http://127.0.0.1:9/hook", eventTypes: ["deployment.updated"] } });
      expect(webhook.status, JSON.stringify(webhook.body)).toBe(201);
      secrets.push(webhook.body.secret);
      const rotated = await call(server, "POST", `/v1/webhooks/${webhook.body.id}/rotate-secret`, { token: key.body.token });
      expect(rotated.status).toBe(200);
      secrets.push(rotated.body.secret);

      // Refusals: unknown tokens, a malformed body.
      const unknown = "bp_" + "f".repeat(64);
      secrets.push(unknown);
      expect((await call(server, "GET", "/v1/projects", { token: unknown })).status).toBe(401);
      expect((await call(server, "POST", "/v1/api-keys", { token: key.body.token, body: { name: 7 } })).status).toBe(400);

      // Forced 5xx: the tables authentication and webhooks need are gone for a moment.
      const fresh = await call(server, "POST", "/v1/api-keys", { body: { name: "fresh", role: "viewer" } });
      secrets.push(fresh.body.token);
      await database.db.execute(sql`alter table api_keys rename to api_keys_gone`);
      await database.db.execute(sql`alter table webhook_endpoints rename to webhook_endpoints_gone`);
      try {
        expect((await call(server, "GET", "/v1/projects", { token: fresh.body.token })).status).toBe(500);
        expect((await call(server, "GET", "/v1/projects", { token: "bp_" + "e".repeat(64) })).status).toBe(500);
        secrets.push("bp_" + "e".repeat(64));
        expect((await call(server, "POST", `/v1/webhooks/${webhook.body.id}/rotate-secret`)).status).toBe(500);
      } finally {
        await database.db.execute(sql`alter table api_keys_gone rename to api_keys`);
        await database.db.execute(sql`alter table webhook_endpoints_gone rename to webhook_endpoints`);
      }
      expect((await call(server, "GET", "/v1/projects", { token: fresh.body.token })).status).toBe(200);
    } finally {
      await server.stop();
    }
    const { stdout, stderr } = server.output();
    const logs = stdout + stderr;
    // The 5xx errors were logged (so the check below looked at real error lines).
    const failures = logs.split("\n").filter((line) => line.includes('"request failed"'));
    expect(failures.length).toBeGreaterThanOrEqual(3);
    expect(failures.join("\n")).toMatch(/"code":"42P01"/);
    for (const secret of secrets) {
      for (const value of [secret, await sha256Hex(secret)]) {
        expect(logs.includes(value), `a log line contains ${value.slice(0, 6)}…`).toBe(false);
      }
    }
  }, 120_000);
});
