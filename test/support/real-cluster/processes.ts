// Processes run inside a network namespace (`ip netns exec` sets the namespace, then execs
// the program under the same pid), each in its own process group with its output in a log
// file, marked with the simulated cluster's owner variable so that a later run reaps them if
// this test process dies without stopping them (k8s/sim/orphans.ts).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { openSync, closeSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { OWNER_ENV } from "../../../k8s/sim/orphans.ts";

const run = promisify(execFile);

export interface NamespacedProcess {
  name: string;
  child: ChildProcess;
  logFile: string;
  exited: Promise<number | null>;
}

export async function createNetworkNamespace(name: string): Promise<void> {
  await run("ip", ["netns", "add", name]);
  await run("ip", ["-n", name, "link", "set", "lo", "up"]);
}

export async function deleteNetworkNamespace(name: string): Promise<void> {
  await run("ip", ["netns", "del", name]).catch(() => undefined);
}

export async function listNetworkNamespaces(): Promise<string[]> {
  const { stdout } = await run("ip", ["netns", "list"]);
  return stdout.split("\n").map((line) => line.split(" ")[0]).filter(Boolean);
}

/** `ip -n <ns> …`, e.g. routes. */
export async function ipInside(namespace: string, args: readonly string[]): Promise<void> {
  await run("ip", ["-n", namespace, ...args]);
}

export function startInside(namespace: string, dir: string, name: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): NamespacedProcess {
  const logFile = join(dir, `${name}.log`);
  const fd = openSync(logFile, "a");
  const child = spawn("ip", ["netns", "exec", namespace, command, ...args], {
    stdio: ["ignore", fd, fd],
    detached: true,
    env: { PATH: process.env.PATH, HOME: dir, ...env, [OWNER_ENV]: String(process.pid) },
  });
  closeSync(fd);
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code) => resolve(code));
    child.once("error", () => resolve(-1));
  });
  return { name, child, logFile, exited };
}

export function logTail(proc: NamespacedProcess, lines = 30): string {
  try {
    return readFileSync(proc.logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/** SIGTERM, then SIGKILL after `graceMs`. */
export async function stopProcess(proc: NamespacedProcess, graceMs = 5_000): Promise<void> {
  signalGroup(proc.child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(proc.child, "SIGKILL"), graceMs);
  await proc.exited;
  clearTimeout(timer);
}
