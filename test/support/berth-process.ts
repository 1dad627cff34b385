// A real `berth serve` process on a temporary data directory (PORT=0; its URL is read from
// the listen log line), and a runner for one-shot `berth …` commands against it. A server can
// also be given a data directory and a port, so a test can stop it and start it again as the
// same installation at the same address.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const BERTH_BIN = join(import.meta.dirname, "../../bin/berth.js");
export const SERVE_ADMIN_TOKEN = "cli-admin-token-0123456789";

export interface BerthServer {
  url: string;
  adminToken: string;
  /** The BERTH_DATA_DIR it runs on. */
  dataDir: string;
  child: ChildProcess;
  /** Everything it wrote so far (its logs). */
  output(): { stdout: string; stderr: string };
  /** SIGTERM, wait for the exit, then remove the data directory unless it is kept. */
  stop(): Promise<void>;
  /** SIGKILL (a crash: no shutdown of any kind) and wait for the exit; the data directory stays. */
  kill(): Promise<void>;
  /** What it wrote to stdout and stderr so far. */
  logs(): string;
}

export interface BerthServerOptions {
  /** Run on this data directory (default: a new temporary one). A given directory is the caller's: never removed. */
  dataDir?: string;
  /** Listen on this port (default 0: any free one). */
  port?: number;
  /** Keep the temporary data directory after stop (default false). */
  keepDataDir?: boolean;
}

/** A loopback port that was free a moment ago (for a server that must come back at the same address). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export async function startBerthServer(env: Record<string, string> = {}, options: BerthServerOptions = {}): Promise<BerthServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "berth-live-"));
  const removeDataDir = options.dataDir === undefined && !options.keepDataDir;
  const port = String(options.port ?? 0);
  const child = spawn(process.execPath, [BERTH_BIN, "serve"], {
    env: { ...process.env, PORT: port, LOG_LEVEL: "info", BERTH_DATA_DIR: dataDir, BERTH_ADMIN_TOKEN: SERVE_ADMIN_TOKEN, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk) => (out += chunk));
  child.stderr!.on("data", (chunk) => (err += chunk));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    if (removeDataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  const url = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`berth serve: no listen line in 60 s:\n${out}\n${err}`)), 60_000);
    const poll = setInterval(() => {
      const match = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (match) {
        clearInterval(poll);
        clearTimeout(deadline);
        resolve(match[1]!);
      }
    }, 50);
    void exited.then(() => {
      clearInterval(poll);
      clearTimeout(deadline);
      reject(new Error(`berth serve exited before listening:\n${out}\n${err}`));
    });
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { url, adminToken: SERVE_ADMIN_TOKEN, dataDir, child, output: () => ({ stdout: out, stderr: err }), stop, kill, logs: () => out + err };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node <file> args…` to its end (killed after timeoutMs), with env added to a clean copy of this process's. */
export function runNode(file: string, args: string[], env: Record<string, string | undefined>, options: { stdin?: string; timeoutMs?: number; nodeArgs?: string[] } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), file, ...args], {
      env: cleanEnv(env),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${file} ${args.join(" ")}: still running after ${options.timeoutMs ?? 30_000} ms\n${stdout}\n${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

/** `berth args…` as a real process. */
export function runBerth(args: string[], env: Record<string, string | undefined>, options: { stdin?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return runNode(BERTH_BIN, args, env, options);
}

/** This process's environment without anything berth reads, plus env (undefined deletes). */
function cleanEnv(env: Record<string, string | undefined>): Record<string, string> {
  const base: Record<string, string | undefined> = { ...process.env };
  for (const key of ["BERTH_URL", "BERTH_TOKEN", "BERTH_PROJECT", "XDG_CONFIG_HOME"]) delete base[key];
  const merged = { ...base, ...env };
  return Object.fromEntries(Object.entries(merged).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
