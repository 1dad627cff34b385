// `berth router` as a real process: /admin/health within 3 s of spawn, admin auth, flag
// errors, BERTH_POD_IP binding, SIGTERM, and a proxied request end to end.
import { join } from "node:path";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { closedPort, startFakeEngine } from "./support/fake-engine.ts";
import { BIN, spawnBerth } from "./support/processes.ts";

const TOKEN = "cli-admin-token-0123456789";
const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((close) => close()));
});

function runToExit(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    let stdout = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.once("exit", (code) => resolve({ code, stderr, stdout }));
  });
}

describe("berth router (process)", () => {
  // How fast it starts is measured in bench/, not here: a loaded machine must not fail this.
  it("answers /admin/health once started, without a token", async () => {
    const port = await closedPort();
    const started = Date.now();
    const child = spawn(process.execPath, [BIN, "router", "--port", String(port), "--admin-token", TOKEN, "--policy", "cache_aware"], {
      stdio: "ignore",
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    cleanup.push(async () => {
      child.kill("SIGKILL");
      await exited;
    });
    let status = 0;
    while (Date.now() - started < 20_000) {
      status = await fetch(`http://127.0.0.1:${port}/admin/health`).then(
        (response) => response.status,
        () => 0,
      );
      if (status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(status).toBe(200);
    const unauthorized = await fetch(`http://127.0.0.1:${port}/admin/endpoints`);
    expect(unauthorized.status).toBe(401);
    const authorized = await fetch(`http://127.0.0.1:${port}/admin/endpoints`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await authorized.json()).toEqual({ endpoints: [], models: [], holdWhenEmpty: false, held: 0 });
  });

  it("proxies to an upstream pushed over the admin API and exits 0 on SIGTERM", async () => {
    const upstream = await startFakeEngine("up");
    cleanup.push(() => upstream.close());
    const router = await spawnBerth(["router", "--port", "0", "--admin-token", TOKEN]);
    cleanup.push(() => router.stop());
    const put = await fetch(`${router.url}/admin/endpoints`, {
      method: "PUT",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ endpoints: [{ id: "up", url: upstream.url, role: "server", state: "eligible" }] }),
    });
    expect(put.status).toBe(200);
    const response = await fetch(`${router.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true }),
    });
    expect(response.headers.get("x-berth-upstream")).toBe("up");
    expect(await response.text()).toMatch(/data: \[DONE\]\n\n$/);
    const metrics = await (await fetch(`${router.url}/metrics`)).text();
    expect(metrics).toMatch(/berth_router_requests_total\{endpoint="up",status="200"\} 1/);
    expect(metrics).toMatch(/berth_router_ttft_seconds_bucket\{le="[^"]+",endpoint="up"\}/);
    expect(metrics).toMatch(/berth_router_process_resident_memory_bytes/);
    expect(await router.stop()).toBe(0);
    expect(router.stdout()).toMatch(/"msg":"berth router stopping"/);
  });

  it("on SIGTERM finishes in-flight streams, answers held requests 503, and exits 0", async () => {
    let release = () => {};
    const slow = await startFakeEngine("slow", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: 1\n\n");
        await new Promise<void>((resolve) => (release = resolve));
        res.end("data: [DONE]\n\n");
      },
    });
    cleanup.push(() => slow.close());
    const router = await spawnBerth(["router", "--port", "0", "--admin-token", TOKEN]);
    cleanup.push(() => router.stop());
    const admin = { authorization: `Bearer ${TOKEN}` };
    await fetch(`${router.url}/admin/endpoints`, {
      method: "PUT",
      headers: admin,
      body: JSON.stringify({ endpoints: [{ id: "slow", url: slow.url, role: "server", state: "eligible" }], holdWhenEmpty: true }),
    });
    const streaming = await fetch(`${router.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }], stream: true }),
    });
    expect(streaming.status).toBe(200);
    const exited = router.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(router.child.exitCode).toBeNull(); // still draining the stream
    release();
    expect(await streaming.text()).toBe("data: 1\n\ndata: [DONE]\n\n");
    expect(await exited).toBe(0);
  });

  it("on SIGTERM answers held requests at once instead of waiting out the grace period", async () => {
    const router = await spawnBerth(["router", "--port", "0", "--admin-token", TOKEN]);
    cleanup.push(() => router.stop());
    await fetch(`${router.url}/admin/endpoints`, {
      method: "PUT",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ endpoints: [], holdWhenEmpty: true }),
    });
    const held = fetch(`${router.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] }),
    });
    const deadline = Date.now() + 5_000;
    for (;;) {
      const view = (await (await fetch(`${router.url}/admin/endpoints`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { held: number };
      if (view.held === 1 || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const started = Date.now();
    const code = router.stop();
    const answer = await held;
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: { message: string } }).error.message).toBe("The router is shutting down.");
    expect(await code).toBe(0);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("binds BERTH_POD_IP when told to listen on 0.0.0.0", async () => {
    const router = await spawnBerth(["router", "--host", "0.0.0.0", "--port", "0", "--admin-token", TOKEN], {
      env: { BERTH_POD_IP: "127.0.0.3" },
    });
    cleanup.push(() => router.stop());
    expect(router.url).toMatch(/^http:\/\/127\.0\.0\.3:\d+$/);
    expect((await fetch(`${router.url}/admin/health`)).status).toBe(200);
  });

  it.each([
    { args: ["--port", "0"], message: /--admin-token: required/ },
    { args: ["--admin-token", "short"], message: /at least 16 characters/ },
    { args: ["--admin-token", TOKEN, "--policy", "random"], message: /--policy: must be one of round_robin, least_load, cache_aware, session_affinity/ },
    { args: ["--admin-token", TOKEN, "--engine", "trtllm"], message: /--engine: must be one of vllm, sglang/ },
    { args: ["--admin-token", TOKEN, "--cache-threshold", "2"], message: /--cache-threshold: must be a number from 0 to 1/ },
    { args: ["--admin-token", TOKEN, "--colour", "blue"], message: /Unknown option '--colour'/ },
  ])("refuses $args with exit 2", async ({ args, message }) => {
    const { code, stderr } = await runToExit(["router", ...args]);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toMatch(/usage: berth router/);
  });

  it("takes the admin token from BERTH_ROUTER_ADMIN_TOKEN", async () => {
    const router = await spawnBerth(["router", "--port", "0"], { env: { BERTH_ROUTER_ADMIN_TOKEN: TOKEN } });
    cleanup.push(() => router.stop());
    const response = await fetch(`${router.url}/admin/endpoints`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
  });

  it("takes the admin token from --admin-token-file (a mounted Secret), and names an unreadable one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-router-token-"));
    const file = join(dir, "token");
    writeFileSync(file, `${TOKEN}\n`);
    const router = await spawnBerth(["router", "--port", "0", "--admin-token-file", file]);
    cleanup.push(() => router.stop());
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const response = await fetch(`${router.url}/admin/endpoints`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    const missing = await runToExit(["router", "--admin-token-file", join(dir, "absent")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--admin-token-file: cannot read/);
  });
});
