// The README's walk-through and every guide in docs/guides run as written: one real `berth up`
// (a fresh data directory, a free port, an admin token set here), then each file's sh blocks in
// one bash with BERTH_URL, BERTH_TOKEN, BERTH_PROJECT, KUBECONFIG and `berth` on PATH, each
// expectation checked against its step's output. Each file must leave no deployment behind, so
// the next one starts on an empty cluster.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BERTH_BIN, freePort } from "../support/berth-process.ts";
import { bashScript, fencedBlocks, runnableSteps, unmetExpectations } from "./runnable-blocks.ts";

const ROOT = join(import.meta.dirname, "../..");
const GUIDES = join(ROOT, "docs/guides");
const ADMIN_TOKEN = "docs-guides-admin-token-0123456789";
/** A file's whole run; the guides wait with bounded --wait/--timeout themselves. */
const FILE_TIMEOUT_MS = 240_000;

/** The guides in the order of the index's links, then README.md first. */
function guideFiles(): string[] {
  const index = readFileSync(join(GUIDES, "README.md"), "utf8");
  const linked = [...index.matchAll(/\]\(\.\/([a-z0-9-]+\.md)\)/g)].map((m) => m[1]!);
  return ["README.md", ...[...new Set(linked)].filter((name) => existsSync(join(GUIDES, name))).map((name) => `docs/guides/${name}`)];
}

const work = mkdtempSync(join(tmpdir(), "berth-guides-"));
const children = new Set<ChildProcess>();
let env: Record<string, string>;

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(env.BERTH_URL + path, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs: number, log: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 10_000; attempt++) {
    const value = await read().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`timed out waiting for ${what}:\n${log()}`);
}

/** Runs one file's sh blocks; resolves with a failure report, or undefined when every step ran and met its expectations. */
async function runGuide(file: string): Promise<string | undefined> {
  const steps = runnableSteps(readFileSync(join(ROOT, file), "utf8"), file);
  const outDir = join(work, file.replaceAll("/", "_"));
  mkdirSync(outDir, { recursive: true });
  const script = join(outDir, "script.sh");
  writeFileSync(script, bashScript(steps, outDir));
  const child = spawn("bash", [script], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  children.add(child);
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  child.stdout!.resume();
  const timer = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), FILE_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  clearTimeout(timer);
  children.delete(child);
  const read = (name: string) => (existsSync(join(outDir, name)) ? readFileSync(join(outDir, name), "utf8") : "");
  const reached = read("current").trim();
  const ran = reached === "done" ? steps.length : Number(reached);
  for (let n = 0; n < ran; n++) {
    const unmet = unmetExpectations(steps[n]!, read(`${n}.out`));
    if (unmet.length > 0) {
      return `${file}:${unmet[0]!.line}: expected ${unmet[0]!.source}\nin the output of\n${steps[n]!.code}\n--- output ---\n${read(`${n}.out`)}`;
    }
  }
  if (code !== 0 || reached !== "done") {
    const step = steps[ran];
    return `${file}:${step?.line ?? "?"}: exited ${code ?? "by the timeout"} in\n${step?.code ?? ""}\n--- output ---\n${read(`${ran}.out`)}${stderr}`;
  }
  return undefined;
}

describe("the marking of runnable blocks", () => {
  it("every fenced block of README.md and docs/guides is a known form, and every guide is in the index", () => {
    const guides = readdirSync(GUIDES).filter((name) => name.endsWith(".md"));
    const listed = guideFiles();
    for (const name of guides) {
      const file = `docs/guides/${name}`;
      fencedBlocks(readFileSync(join(ROOT, file), "utf8"), file);
      if (name === "README.md") continue;
      expect(listed, `${file} is linked from docs/guides/README.md`).toContain(file);
    }
    expect(runnableSteps(readFileSync(join(ROOT, "README.md"), "utf8"), "README.md").length).toBeGreaterThan(0);
  });
});

describe("guides run against berth up", () => {
  let up: ChildProcess;
  let upLog = "";

  beforeAll(async () => {
    const port = await freePort();
    const dataDir = join(work, "data");
    const bin = join(work, "bin");
    mkdirSync(bin);
    symlinkSync(BERTH_BIN, join(bin, "berth"));
    up = spawn(process.execPath, [BERTH_BIN, "up"], {
      env: { ...process.env, PORT: String(port), BERTH_DATA_DIR: dataDir, BERTH_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: "warn", DATABASE_URL: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(up);
    up.stdout!.on("data", (chunk) => (upLog += chunk));
    up.stderr!.on("data", (chunk) => (upLog += chunk));
    env = {
      ...(process.env as Record<string, string>),
      BERTH_URL: `http://127.0.0.1:${port}`,
      BERTH_TOKEN: ADMIN_TOKEN,
      KUBECONFIG: join(dataDir, "kubeconfig"),
      XDG_CONFIG_HOME: join(work, "config"),
      PATH: `${bin}:${process.env.PATH}`,
    };
    const cluster = await until(
      "a connected cluster with its inventory",
      async () => {
        const clusters = await api("GET", "/v1/clusters");
        return clusters.body?.items?.[0]?.inventory ? clusters.body.items[0] : undefined;
      },
      90_000,
      () => upLog,
    );
    expect(cluster.status.phase).toBe("Connected");
    const projects = await api("GET", "/v1/projects?limit=100");
    env.BERTH_PROJECT = projects.body.items.find((p: { name: string }) => p.name === "default").id;
  }, 120_000);

  afterAll(async () => {
    const exited = up.exitCode !== null || up.signalCode !== null ? Promise.resolve() : new Promise((resolve) => up.once("exit", resolve));
    for (const child of children) {
      if (child === up) child.kill("SIGTERM");
      else if (child.pid) process.kill(-child.pid, "SIGKILL");
    }
    await exited;
    rmSync(work, { recursive: true, force: true });
  }, 15_000);

  it.each(guideFiles())("%s runs as written and leaves no deployment behind", async (file) => {
    const failure = await runGuide(file);
    const left = await api("GET", "/v1/deployments?limit=100");
    const names = (left.body?.items ?? []).map((d: { name: string; status: { phase: string } }) => `${d.name} (${d.status.phase})`);
    // Clean up for the next file whatever happened here, then report.
    for (const d of left.body?.items ?? []) await api("DELETE", `/v1/deployments/${d.id}`);
    if (names.length > 0) await until("the leftover deployments gone", async () => ((await api("GET", "/v1/deployments")).body.items.length === 0 ? true : undefined), 60_000, () => upLog);
    expect(failure).toBeUndefined();
    expect(names, `${file} left deployments behind`).toEqual([]);
  }, FILE_TIMEOUT_MS + 90_000);
});
