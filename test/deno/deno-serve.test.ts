// The API on Deno: `deno task serve` (the npm-installed deno, offline) as a real child
// process against a fresh PostgreSQL database; create a deployment and read it back.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aDeployment } from "../fixtures/deployment-builder.ts";
import { openTestDatabase, type TestDatabase } from "../support/databases.ts";
import { TEST_SECRET_KEY } from "../support/secret-key.ts";
import { Webhook } from "standardwebhooks";
import { startReceiver } from "../webhooks/support/receiver.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DENO = fileURLToPath(new URL("../../node_modules/.bin/deno", import.meta.url));
const ADMIN_TOKEN = "deno-test-admin-token-0123456789ab";
const METRICS_TOKEN = "deno-test-metrics-token-0123456789";
// The first start transpiles the whole import graph (about 5–10 s here); later starts use deno's cache.
const START_TIMEOUT_MS = 90_000;

let database: TestDatabase;
let child: ChildProcess | undefined;
let baseUrl: string;
let output = "";

/** Resolves with the URL from the entry's "berth API listening" log line. */
function waitForListening(process: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`deno did not start in ${START_TIMEOUT_MS} ms:\n${output}`)), START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"berth API listening"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    process.stdout!.on("data", onData);
    process.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    process.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`deno exited early (${code ?? signal}):\n${output}`));
    });
  });
}

async function waitForReady(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(`${url}/readyz`).catch(() => undefined);
    if (res?.status === 200) return;
    if (Date.now() > deadline) throw new Error(`/readyz never answered 200:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Stops the task runner and the deno it started (one process group), waiting for both. */
async function stopChild(process: ChildProcess): Promise<void> {
  if (process.exitCode !== null || process.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => process.once("exit", () => resolve()));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      globalThis.process.kill(-process.pid!, signal);
    } catch {}
  };
  signalGroup("SIGTERM");
  const killTimer = setTimeout(() => signalGroup("SIGKILL"), 10_000);
  await exited;
  clearTimeout(killTimer);
}

function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${ADMIN_TOKEN}`);
  if (init.body) headers.set("Content-Type", "application/json");
  return fetch(`${baseUrl}${path}`, { ...init, headers });
}

beforeAll(async () => {
  database = await openTestDatabase("postgres");
  child = spawn(DENO, ["task", "serve"], {
    cwd: ROOT,
    detached: true, // its own process group, so afterAll stops the task runner and its deno together
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...(process.env.DENO_DIR ? { DENO_DIR: process.env.DENO_DIR } : {}),
      NO_COLOR: "1",
      HOST: "127.0.0.1",
      PORT: "0",
      DATABASE_URL: database.url,
      BERTH_ADMIN_TOKEN: ADMIN_TOKEN,
      BERTH_SECRET_KEY: TEST_SECRET_KEY,
      LOG_LEVEL: "info",
      BERTH_WEBHOOK_ALLOW_PRIVATE: "true", // the webhook receiver below is on loopback, over http
      BERTH_WEBHOOK_ALLOW_HTTP: "true",
      BERTH_METRICS_TOKEN: METRICS_TOKEN,
    },
  });
  baseUrl = await waitForListening(child);
  await waitForReady(baseUrl);
}, START_TIMEOUT_MS + 40_000);

afterAll(async () => {
  if (child) await stopChild(child);
  await database?.close();
}, 30_000);

async function defaultProjectId(): Promise<string> {
  const { items } = (await (await api("/v1/projects")).json()) as { items: Array<{ id: string; name: string }> };
  return items.find((p) => p.name === "default")!.id;
}

describe("deno task serve", () => {
  it("serves the API from Deno on PostgreSQL", async () => {
    expect(output).toContain('"driver":"postgres"');
    expect(output).toContain('"runtime":"deno"');
    const health = await fetch(`${baseUrl}/healthz`);
    expect(await health.json()).toEqual({ status: "ok" });
    const refused = await fetch(`${baseUrl}/metrics`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="berth"');
    await refused.body?.cancel();
    const metrics = await fetch(`${baseUrl}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(await metrics.text()).toContain("berth_api_process_cpu_seconds_total");
  });

  it("creates a deployment in the bootstrap project and reads it back", async () => {
    const projects = await api("/v1/projects");
    expect(projects.status).toBe(200);
    const { items } = (await projects.json()) as { items: Array<{ id: string; name: string }> };
    const project = items.find((p) => p.name === "default");
    expect(project, JSON.stringify(items)).toBeDefined();

    const body = { ...aDeployment().name("deno-chat").build(), projectId: project!.id };
    const created = await api("/v1/deployments", { method: "POST", body: JSON.stringify(body) });
    expect(created.status, await created.clone().text()).toBe(201);
    const deployment = (await created.json()) as { id: string; name: string; projectId: string; resourceVersion: number; spec: unknown };
    expect(deployment).toMatchObject({ name: "deno-chat", projectId: project!.id });
    expect(created.headers.get("location")).toBe(`/v1/deployments/${deployment.id}`);

    const read = await api(`/v1/deployments/${deployment.id}`);
    expect(read.status).toBe(200);
    expect(read.headers.get("etag")).toBe(`"${deployment.resourceVersion}"`);
    expect(await read.json()).toEqual(deployment);
  });

  it("delivers signed webhooks from its dispatcher loop", async () => {
    const receiver = await startReceiver();
    try {
      const created = await api("/v1/webhooks", {
        method: "POST",
        body: JSON.stringify({ url: receiver.url, eventTypes: ["deployment.created"] }),
      });
      expect(created.status, await created.clone().text()).toBe(201);
      const { secret } = (await created.json()) as { secret: string };
      const deployment = await api("/v1/deployments", {
        method: "POST",
        body: JSON.stringify({ ...aDeployment().name("deno-hooked").build(), projectId: await defaultProjectId() }),
      });
      expect(deployment.status).toBe(201);
      await receiver.waitFor(1, 15_000);
      const [request] = receiver.received;
      expect(new Webhook(secret).verify(request!.body, request!.headers)).toMatchObject({
        type: "deployment.created",
        data: { deployment: { name: "deno-hooked" } },
      });
    } finally {
      await receiver.close();
    }
  });

  it("serves /docs with its bundle read by the Deno entry", async () => {
    const page = await fetch(`${baseUrl}/docs`);
    expect(await page.text()).toContain('<script src="/docs/scalar.js"></script>');
    const bundle = await fetch(`${baseUrl}/docs/scalar.js`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });
});
