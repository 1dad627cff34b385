// `berth up` end to end, as the README walks through it: one command starts the API, the
// simulated cluster and the agent; `berth apply` of the example → Ready; a chat completion at
// status.endpoint; kubectl shows the pods; SIGTERM exits within 3 s and kills the pods; a
// restart reuses the cluster, the kubeconfig's server URL and the endpoint address and converges
// again; --reset starts empty. Quiet by default: start-up lines, then the banner last (also in up.txt).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { BERTH_BIN, runBerth } from "../support/berth-process.ts";

const EXAMPLE = join(import.meta.dirname, "../../examples/qwen-chat.yaml");
const dataDir = mkdtempSync(join(tmpdir(), "berth-up-"));
const configHome = mkdtempSync(join(tmpdir(), "berth-up-config-"));
const running = new Set<ChildProcess>();

interface Up {
  child: ChildProcess;
  url: string;
  clusterId: string;
  adminToken: string;
  projectId: string;
  kubeconfig: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `berth up` (LOG_LEVEL unset: its default, quiet output) and resolves once it has printed its banner. */
async function startUp(args: string[] = []): Promise<Up> {
  const child = spawn(process.execPath, [BERTH_BIN, "up", "--time-scale", "0.1", ...args], {
    env: { ...process.env, PORT: "0", BERTH_DATA_DIR: dataDir, LOG_LEVEL: "", BERTH_ADMIN_TOKEN: "", DATABASE_URL: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk) => (out += chunk));
  child.stderr!.on("data", (chunk) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => (running.delete(child), resolve(code))));
  await new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`berth up: not ready in 90 s:\n${out}\n${err}`)), 90_000);
    const poll = setInterval(() => {
      if (out.includes("Ctrl-C stops everything")) {
        clearInterval(poll);
        clearTimeout(deadline);
        resolve();
      }
    }, 50);
    void exited.then(() => (clearInterval(poll), clearTimeout(deadline), reject(new Error(`berth up exited:\n${out}\n${err}`))));
  });
  const exported = /export BERTH_URL=(\S+) BERTH_TOKEN=(\S+) BERTH_PROJECT=(\S+)/.exec(out)!;
  const cluster = /cluster {6}\S+ \((clu_\w+)\)/.exec(out)!;
  const kubeconfig = /export KUBECONFIG=(\S+)/.exec(out)!;
  return {
    child,
    url: exported[1]!,
    clusterId: cluster[1]!,
    kubeconfig: kubeconfig[1]!,
    adminToken: exported[2]!,
    projectId: exported[3]!,
    stdout: () => out,
    stderr: () => err,
    exited,
  };
}

async function call(up: Up, method: string, path: string, body?: unknown) {
  const res = await fetch(up.url + path, {
    method,
    headers: { Authorization: `Bearer ${up.adminToken}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function eventually<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const berth = (up: Up, args: string[]) =>
  runBerth(args, { BERTH_URL: up.url, BERTH_TOKEN: up.adminToken, BERTH_PROJECT: up.projectId, XDG_CONFIG_HOME: configHome }, { timeoutMs: 30_000 });

const readyDeployment = (up: Up, name: string) =>
  eventually(`${name} Ready`, async () => {
    const res = await call(up, "GET", `/v1/deployments/${name}?projectId=${up.projectId}`);
    return res.body?.status?.phase === "Ready" ? res.body : undefined;
  });

async function chat(endpoint: string) {
  const res = await fetch(`${endpoint}/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ model: "Qwen/Qwen3-8B", messages: [{ role: "user", content: "Hello" }], max_tokens: 8 }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: await res.json() };
}

/** Sends SIGTERM and resolves with the milliseconds until the process exited. */
async function terminate(up: Up): Promise<number> {
  const started = Date.now();
  up.child.kill("SIGTERM");
  await up.exited;
  return Date.now() - started;
}

afterAll(async () => {
  for (const child of running) child.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(configHome, { recursive: true, force: true });
});

describe("berth up", () => {
  let first: Up;
  let endpoint: string;

  it("starts the API, a connected 2 × 8 GPU cluster and a default project without quota", async () => {
    first = await startUp();
    const clusters = await eventually("a connected cluster with inventory", async () => {
      const res = await call(first, "GET", "/v1/clusters");
      return res.body.items[0]?.inventory ? res.body.items : undefined;
    });
    expect(clusters).toHaveLength(1);
    expect(clusters[0].id).toBe(first.clusterId);
    expect(clusters[0].status.phase).toBe("Connected");
    expect(clusters[0].inventory.nodes).toEqual([
      { name: "sim-gpu-0", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 8 },
      { name: "sim-gpu-1", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 8 },
    ]);
    const project = await call(first, "GET", `/v1/projects/${first.projectId}`);
    expect(project.body.name).toBe("default");
    expect(project.body.maxGpus).toBeUndefined();
    // Credentials are kept for restarts, readable by the owner only; the banner too.
    expect(statSync(join(dataDir, "up.json")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, "up.txt")).mode & 0o777).toBe(0o600);
    const saved = readFileSync(join(dataDir, "up.txt"), "utf8");
    expect(saved).toContain(`export BERTH_URL=${first.url} BERTH_TOKEN=${first.adminToken} BERTH_PROJECT=${first.projectId}`);
    expect(saved).toContain(`export KUBECONFIG=${first.kubeconfig}`);
    // Quiet: start-up lines on stderr, no request logs; the banner is the last thing printed.
    expect(first.stderr()).toMatch(/^berth up: starting the API/);
    expect(first.stderr()).not.toContain('"msg":"request"');
    expect(first.stdout().trimEnd().endsWith("Ctrl-C stops everything)")).toBe(true);
    expect(JSON.parse(readFileSync(join(dataDir, "up.json"), "utf8"))).toMatchObject({ clusterId: first.clusterId, adminToken: first.adminToken });
  }, 90_000);

  it("takes the README's example from `berth apply` to a chat completion, with kubectl showing the pods", async () => {
    const applied = await berth(first, ["apply", "-f", EXAMPLE]);
    expect(applied.stderr).toBe("");
    expect(applied.stdout).toContain("deployment/qwen-chat created");
    const deployment = await readyDeployment(first, "qwen-chat");
    expect(deployment.status.roles).toEqual([{ name: "main", kind: "server", desired: 2, ready: 2, updated: 2, draining: 0 }]);
    endpoint = deployment.status.endpoint;
    // The example has the builtin router: the endpoint is the router Service (port 8080).
    expect(endpoint).toMatch(/^http:\/\/127\.\d+\.\d+\.\d+:8080$/);
    const answer = await chat(endpoint);
    expect(answer.status).toBe(200);
    expect(answer.body.model).toBe("Qwen/Qwen3-8B");
    expect(answer.body.choices[0].message.content.length).toBeGreaterThan(0);

    const { stdout } = await promisify(execFile)("kubectl", ["--kubeconfig", first.kubeconfig, "get", "pods", "-A"], { timeout: 30_000 });
    expect(stdout).toMatch(/berth-default\s+qwen-chat-main-r0-m0\s+1\/1\s+Running/);
    expect(stdout).toMatch(/berth-default\s+qwen-chat-main-r1-m0\s+1\/1\s+Running/);
    expect(stdout).toMatch(/berth-default\s+qwen-chat-router-\S+\s+1\/1\s+Running/);

    const events = await call(first, "GET", `/v1/events?deploymentId=${deployment.id}`);
    expect(events.body.items.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(["deployment.created", "deployment.ready"]));
  }, 120_000);

  it("exits within 3 s of SIGTERM and takes its simulated pods with it", async () => {
    const elapsed = await terminate(first);
    expect(elapsed).toBeLessThan(3_000);
    await expect(chat(endpoint)).rejects.toThrow();
  }, 30_000);

  it("reuses its cluster, credential, admin token, kubeconfig server URL and endpoint address on restart, and converges again", async () => {
    const server = () => /server: (\S+)/.exec(readFileSync(first.kubeconfig, "utf8"))![1];
    const serverBefore = server();
    const second = await startUp();
    expect(second.clusterId).toBe(first.clusterId);
    expect(second.adminToken).toBe(first.adminToken);
    expect(server()).toBe(serverBefore);
    // The banner's token works on the second start too.
    expect((await call(second, "GET", "/v1/projects")).status).toBe(200);
    const clusters = await call(second, "GET", "/v1/clusters");
    expect(clusters.body.items).toHaveLength(1);
    // The stored status is the last run's until the new agent's first report: wait for an answer.
    // The endpoint clients held from the first run answers again, at the same address.
    await eventually("a chat completion at the old endpoint after the restart", async () => (await chat(endpoint)).status === 200);
    const deployment = await readyDeployment(second, "qwen-chat");
    expect(deployment.status.endpoint).toBe(endpoint);
    expect(await terminate(second)).toBeLessThan(3_000);
  }, 120_000);

  it("starts empty with --reset", async () => {
    const third = await startUp(["--reset"]);
    expect(third.clusterId).not.toBe(first.clusterId);
    expect(third.adminToken).not.toBe(first.adminToken);
    const deployments = await call(third, "GET", "/v1/deployments");
    expect(deployments.body.items).toEqual([]);
    expect(await terminate(third)).toBeLessThan(3_000);
  }, 90_000);

  it("refuses a bad flag with exit 2 and the usage", async () => {
    const result = await runBerth(["up", "--nodes", "0"], { BERTH_DATA_DIR: dataDir }, { timeoutMs: 30_000 });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--nodes must be an integer from 1 to 64 (got 0)");
    expect(result.stderr).toContain("usage: berth up");
  }, 30_000);
});
