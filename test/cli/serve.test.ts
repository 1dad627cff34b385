// `berth serve` as a real process on a real socket: first-start key, restart, probes,
// metrics, request ids, JSON logs, configuration errors and shutdown.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const BIN = join(import.meta.dirname, "../../bin/berth.js");

interface Served {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function serve(env: Record<string, string>): Promise<Served> {
  const child = spawn(process.execPath, [BIN, "serve"], {
    env: { ...process.env, PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk) => (out += chunk));
  child.stderr!.on("data", (chunk) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`no listen line in 60 s:\n${out}\n${err}`)), 60_000);
    const poll = setInterval(() => {
      const match = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (match) {
        clearInterval(poll);
        clearTimeout(deadline);
        resolve({ child, url: match[1]!, stdout: () => out, stderr: () => err, exited });
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(poll);
      clearTimeout(deadline);
      reject(new Error(`exited ${code} before listening:\n${out}\n${err}`));
    });
  });
}

async function stop(served: Served): Promise<number | null> {
  served.child.kill("SIGTERM");
  return served.exited;
}

function runToExit(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, "serve"], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (chunk) => (err += chunk));
    child.once("exit", (code) => resolve({ code, stderr: err }));
  });
}

describe("berth serve", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "berth-serve-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("prints an admin key once on an empty database, and not after a restart", async () => {
    const first = await serve({ BERTH_DATA_DIR: dataDir });
    let key: string;
    try {
      key = /bp_[0-9a-f]{64}/.exec(first.stderr())?.[0] ?? "";
      expect(key).not.toBe("");

      const health = await fetch(`${first.url}/healthz`);
      expect(health.status).toBe(200);
      expect(health.headers.get("x-request-id")).toMatch(/^req_/);
      expect((await fetch(`${first.url}/readyz`)).status).toBe(200);

      const projects = await fetch(`${first.url}/v1/projects`, {
        headers: { Authorization: `Bearer ${key}`, "X-Request-Id": "trace-me-1" },
      });
      expect(projects.status).toBe(200);
      expect(projects.headers.get("x-request-id")).toBe("trace-me-1");
      const body = (await projects.json()) as { items: { name: string }[] };
      expect(body.items.map((p) => p.name)).toEqual(["default"]);

      const metrics = await (await fetch(`${first.url}/metrics`)).text();
      expect(metrics).toMatch(/berth_api_http_requests_total\{[^}]*route="\/v1\/projects"[^}]*\}/);
      expect(metrics).toMatch(/berth_api_http_request_duration_seconds_bucket/);

      const logLine = first
        .stdout()
        .split("\n")
        .find((line) => line.includes('"requestId":"trace-me-1"'));
      expect(JSON.parse(logLine!)).toMatchObject({ method: "GET", path: "/v1/projects", status: 200 });
    } finally {
      expect(await stop(first)).toBe(0);
    }

    // The restart also sets a metrics token: /metrics then needs it (the API key is not it).
    const second = await serve({ BERTH_DATA_DIR: dataDir, BERTH_METRICS_TOKEN: "serve-metrics-token-0123456789" });
    try {
      expect(second.stderr()).not.toMatch(/bp_[0-9a-f]{64}/);
      const again = await fetch(`${second.url}/v1/projects`, { headers: { Authorization: `Bearer ${key}` } });
      expect(again.status).toBe(200);
      const refused = await fetch(`${second.url}/metrics`, { headers: { Authorization: `Bearer ${key}` } });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="berth"');
      const metrics = await fetch(`${second.url}/metrics`, { headers: { Authorization: "Bearer serve-metrics-token-0123456789" } });
      expect(await metrics.text()).toMatch(/berth_api_http_requests_total/);
    } finally {
      await stop(second);
    }
  }, 120_000);

  it("uses BERTH_ADMIN_TOKEN as given and prints no key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-serve-token-"));
    const served = await serve({ BERTH_DATA_DIR: dir, BERTH_ADMIN_TOKEN: "my-own-admin-token-123" });
    try {
      expect(served.stderr()).not.toMatch(/bp_[0-9a-f]{64}/);
      const res = await fetch(`${served.url}/v1/projects`, { headers: { Authorization: "Bearer my-own-admin-token-123" } });
      expect(res.status).toBe(200);
    } finally {
      await stop(served);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("exits at once on SIGTERM while an agent long-poll and an event stream are open", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-serve-stop-"));
    const admin = "stop-admin-token-0123456789";
    const served = await serve({ BERTH_DATA_DIR: dir, BERTH_ADMIN_TOKEN: admin });
    try {
      const post = (path: string, body: unknown, token?: string) =>
        fetch(served.url + path, {
          method: "POST",
          headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) },
          body: JSON.stringify(body),
        }).then((r) => r.json());
      const { joinToken } = await post("/v1/clusters", { name: "held" }, admin);
      const { token } = await post("/v1/agent/register", { joinToken });
      // A long-poll waiting 60 s and a stream that never ends on its own: neither may hold the exit.
      const poll = fetch(`${served.url}/v1/agent/desired?since=1&waitSeconds=60`, { headers: { Authorization: `Bearer ${token}` } });
      const stream = await fetch(`${served.url}/v1/events/stream`, { headers: { Authorization: `Bearer ${admin}` } });
      expect(stream.status).toBe(200);
      const reading = stream.text().catch(() => "");
      await new Promise((resolve) => setTimeout(resolve, 500));
      const started = Date.now();
      expect(await stop(served)).toBe(0);
      // Held by the long-poll it would take 60 s; the margin is for a loaded machine.
      expect(Date.now() - started).toBeLessThan(20_000);
      expect((await poll).status).toBe(200);
      await reading;
    } finally {
      served.child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it.each([
    [{ PORT: "not-a-port" }, /PORT/],
    [{ BERTH_ADMIN_TOKEN: "short" }, /BERTH_ADMIN_TOKEN: must be at least 16 characters/],
    [{ DATABASE_DRIVER: "mysql" }, /DATABASE_DRIVER/],
    [{ DATABASE_URL: "mysql://x" }, /DATABASE_URL/],
  ])("stops at start with a clear message for %o", async (env, message) => {
    const { code, stderr } = await runToExit({ BERTH_DATA_DIR: dataDir, ...env });
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toContain("Invalid configuration");
  }, 60_000);
});
