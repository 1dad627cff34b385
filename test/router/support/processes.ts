// Real `node bin/berth.js …` child processes (the router, the engine simulator) for
// integration tests: started, awaited until their JSON log says where they listen, stopped
// with SIGTERM (then SIGKILL), and never left behind.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

export const BIN = join(import.meta.dirname, "../../../bin/berth.js");

export interface BerthProcess {
  child: ChildProcess;
  url: string;
  /** Milliseconds from spawn to the listening log line. */
  startupMs: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/**
 * Spawns `berth <args>` and resolves once a log line carries `"url"` and matches `ready`
 * (default: any line with a url).
 */
export function spawnBerth(args: string[], options: { env?: Record<string, string>; ready?: RegExp; timeoutMs?: number } = {}): Promise<BerthProcess> {
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: "info", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk) => (out += chunk));
  child.stderr!.on("data", (chunk) => (err += chunk));
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  return new Promise((resolve, reject) => {
    const timeoutMs = options.timeoutMs ?? 20_000;
    const deadline = setTimeout(() => {
      void stop();
      reject(new Error(`berth ${args.join(" ")}: no listening line in ${timeoutMs} ms\n${out}\n${err}`));
    }, timeoutMs);
    const poll = setInterval(() => {
      for (const line of out.split("\n")) {
        const url = /"url":"(http:\/\/[^"]+)"/.exec(line)?.[1];
        if (url !== undefined && (options.ready === undefined || options.ready.test(line))) {
          clearInterval(poll);
          clearTimeout(deadline);
          resolve({ child, url, startupMs: Date.now() - started, stdout: () => out, stderr: () => err, exited, stop });
          return;
        }
      }
    }, 10);
    void exited.then((code) => {
      clearInterval(poll);
      clearTimeout(deadline);
      reject(new Error(`berth ${args.join(" ")} exited ${code} before listening:\n${out}\n${err}`));
    });
  });
}
