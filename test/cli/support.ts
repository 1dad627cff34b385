// Shared by the CLI tests: a berth serve process, a per-file config directory, and helpers
// to run `berth …` against it and call the API directly for set-up and checks.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BERTH_BIN, runBerth, type BerthServer, type RunResult } from "../support/berth-process.ts";

export interface CliWorld {
  server: BerthServer;
  /** XDG_CONFIG_HOME of every run (so no test reads a real login). */
  configHome: string;
  /** Files the tests write (deployment manifests). */
  workDir: string;
  /** `berth args…` with BERTH_URL/BERTH_TOKEN of `token` (default: the admin token). */
  berth(args: string[], options?: { token?: string; env?: Record<string, string | undefined>; stdin?: string }): Promise<RunResult>;
  /** A direct API call (the check beside the CLI's answer). */
  api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any; headers: Headers }>;
}

export function cliWorld(server: BerthServer): CliWorld {
  const configHome = mkdtempSync(join(tmpdir(), "berth-cli-config-"));
  const workDir = mkdtempSync(join(tmpdir(), "berth-cli-work-"));
  return {
    server,
    configHome,
    workDir,
    berth: (args, options = {}) =>
      runBerth(
        args,
        { BERTH_URL: server.url, BERTH_TOKEN: options.token ?? server.adminToken, XDG_CONFIG_HOME: configHome, ...options.env },
        { stdin: options.stdin },
      ),
    api: async (method, path, body, token = server.adminToken) => {
      const response = await fetch(server.url + path, {
        method,
        headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
    },
  };
}

/** A long-running `berth args…` whose stdout lines can be awaited; stop() sends SIGINT. */
export function spawnBerth(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [BERTH_BIN, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    lines: () => stdout.split("\n").filter(Boolean),
    stderr: () => stderr,
    async waitForLines(count: number, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (stdout.split("\n").filter(Boolean).length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} lines in ${timeoutMs} ms, got:\n${stdout}\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async stop(): Promise<number | null> {
      child.kill("SIGINT");
      return exited;
    },
  };
}
