// A throwaway PostgreSQL 15 server in a temp dir, for the test run (global-setup.ts) and
// anything else that needs a real server (bench/): `<root>/data`,
// an `owner.pid` file, initdb/pg_ctl run as the `postgres` user when we are root (they
// refuse root), `-l` so pg_ctl returns, and a synchronous stop on process exit.
//
//   const server = await startPostgresServer();
//   try { … server.adminUrl … } finally { await server.stop(); }
import { execFile, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const PG_BIN = process.env.BERTH_PG_BIN ?? "/usr/lib/postgresql/15/bin";
const isRoot = process.getuid?.() === 0;

export interface PostgresServer {
  /** Superuser (`app`, trust auth) connection string to the `postgres` database. */
  adminUrl: string;
  /** The temp dir holding `data/` and `postgres.log`. */
  root: string;
  /** Stops the server (immediate mode) and removes the temp dir; safe to call twice. */
  stop(): Promise<void>;
}

/** Prefix of the temp dirs holding a server; global-setup sweeps those whose owner died. */
export const PG_DIR_PREFIX = "berth-pg-";
/** File in each temp dir naming the pid of the process that owns it. */
export const OWNER_FILE = "owner.pid";

export interface PostgresServerOptions {
  /** Temp dir prefix; the default matches global-setup.ts, whose sweep then also removes dirs left by a killed run. */
  prefix?: string;
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
}

function pgCommand(bin: string, args: string[]): { file: string; args: string[] } {
  const path = join(PG_BIN, bin);
  return isRoot ? { file: "runuser", args: ["-u", "postgres", "--", path, ...args] } : { file: path, args };
}

async function runPg(bin: string, args: string[], cwd: string): Promise<void> {
  const { file, args: argv } = pgCommand(bin, args);
  await run(file, argv, { cwd, maxBuffer: 16 * 1024 * 1024 });
}

/** Stops the server of a temp dir (if one runs) and removes the dir; synchronous so it works on process exit. */
export function stopAndRemoveSync(root: string): void {
  const dataDir = join(root, "data");
  if (existsSync(join(dataDir, "postmaster.pid"))) {
    const { file, args } = pgCommand("pg_ctl", ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
    spawnSync(file, args, { cwd: root, stdio: "ignore" });
  }
  rmSync(root, { recursive: true, force: true });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startPostgresServer(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  const root = await mkdtemp(join(tmpdir(), options.prefix ?? PG_DIR_PREFIX));
  await writeFile(join(root, OWNER_FILE), String(process.pid));
  const onExit = () => stopAndRemoveSync(root);
  process.once("exit", onExit);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off("exit", onExit);
    stopAndRemoveSync(root);
  };

  const dataDir = join(root, "data");
  const logFile = join(root, "postgres.log");
  try {
    if (isRoot) await run("chown", ["postgres:", root]);
    await runPg("initdb", ["-D", dataDir, "-U", "app", "--auth=trust", "--no-sync", "-E", "UTF8", "--no-locale"], root);
  } catch (error) {
    await stop();
    throw new Error(`initdb failed: ${(error as Error).message}`);
  }

  const settings = { listen_addresses: "127.0.0.1", max_connections: 300, fsync: "off", ...options.settings };
  const settingArgs = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(" ");
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      await runPg("pg_ctl", ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "-o", `-p ${port} -k ${dataDir} ${settingArgs}`, "start"], root);
      return { adminUrl: `postgres://app@127.0.0.1:${port}/postgres`, root, stop };
    } catch (error) {
      lastError = error; // most likely the port was taken between freePort() and start; try another
    }
  }
  let serverLog = "";
  try {
    serverLog = readFileSync(logFile, "utf8").split("\n").slice(-30).join("\n");
  } catch {}
  await stop();
  throw new Error(`pg_ctl start failed: ${(lastError as Error).message}\n${serverLog}`);
}
