// Vitest globalSetup: runs once in the main process before any test file.
//
// - Starts ONE throwaway PostgreSQL 15 in a temp dir (or uses BERTH_TEST_DATABASE_URL),
//   creates the template database `berth_template` and migrates it once; each test then
//   clones it with `CREATE DATABASE … TEMPLATE` (see databases.ts).
// - Starts a WebSocket→TCP proxy so the Neon driver can reach that server.
// - Migrates ONE in-memory PGlite and writes `dumpDataDir()` to a temp file; tests load it
//   instead of migrating again (PGlite creation is slow, STACK gotcha 3).
//
// Temp dirs carry an `owner.pid` file; a later run stops and removes those whose owner
// died without tearing down (SIGKILL, Ctrl-C during setup), so servers never pile up.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { createDatabase } from "../../db/client.ts";
import { startNeonProxy } from "./neon-proxy.ts";
import type { NeonProxy } from "./neon-proxy.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser connection string (database `postgres`) of the shared test server. */
    postgresAdminUrl: string;
    /** Name of the migrated template database that tests clone. */
    postgresTemplateDb: string;
    /** Port of the Neon WebSocket proxy on 127.0.0.1 (path /v1). */
    neonProxyPort: number;
    /** File holding a PGlite `dumpDataDir()` tarball of a migrated database. */
    pgliteDumpPath: string;
  }
}

const run = promisify(execFile);
const PG_BIN = process.env.BERTH_PG_BIN ?? "/usr/lib/postgresql/15/bin";
const TEMPLATE_DB = "berth_template";
const PG_DIR_PREFIX = "berth-pg-";
const SCRATCH_DIR_PREFIX = "berth-test-";
const OWNER_FILE = "owner.pid";
const isRoot = process.getuid?.() === 0;

function log(message: string): void {
  if (process.env.BERTH_TEST_QUIET !== "1") console.log(`[global-setup] ${message}`);
}

/** A PostgreSQL binary, run as the `postgres` user when we are root (initdb/pg_ctl refuse root). */
function pgCommand(bin: string, args: string[]): { file: string; args: string[] } {
  const path = join(PG_BIN, bin);
  return isRoot ? { file: "runuser", args: ["-u", "postgres", "--", path, ...args] } : { file: path, args };
}

async function runPg(bin: string, args: string[], cwd: string): Promise<void> {
  const { file, args: argv } = pgCommand(bin, args);
  await run(file, argv, { cwd, maxBuffer: 16 * 1024 * 1024 });
}

/** Stops the server of a temp dir (if one runs) and removes the dir; synchronous so it works on process exit. */
function destroyPgDirSync(root: string): void {
  const dataDir = join(root, "data");
  if (existsSync(join(dataDir, "postmaster.pid"))) {
    const { file, args } = pgCommand("pg_ctl", ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
    spawnSync(file, args, { cwd: root, stdio: "ignore" });
  }
  rmSync(root, { recursive: true, force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Cleans up temp dirs left by runs whose process is gone. Dirs of live runs are left alone. */
function sweepOrphans(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PG_DIR_PREFIX) && !name.startsWith(SCRATCH_DIR_PREFIX)) continue;
    const root = join(tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(join(root, OWNER_FILE), "utf8"));
    } catch {
      continue; // no owner file (yet): not ours to judge
    }
    if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue;
    log(`removing leftover ${root} of dead process ${owner}`);
    destroyPgDirSync(root);
  }
}

async function makeOwnedTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await writeFile(join(dir, OWNER_FILE), String(process.pid));
  return dir;
}

async function freePort(): Promise<number> {
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

/** Runs initdb + pg_ctl start in `root` (already created, owned by us); returns the admin URL. */
async function startLocalPostgres(root: string): Promise<string> {
  const dataDir = join(root, "data");
  const logFile = join(root, "postgres.log");
  try {
    if (isRoot) await run("chown", ["postgres:", root]);
    await runPg("initdb", ["-D", dataDir, "-U", "app", "--auth=trust", "--no-sync", "-E", "UTF8", "--no-locale"], root);
  } catch (error) {
    throw new Error(`initdb failed: ${(error as Error).message}`);
  }

  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const serverOptions = `-p ${port} -k ${dataDir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off`;
    try {
      // -l matters: without it the server inherits pg_ctl's stdout and execFile never returns.
      await runPg("pg_ctl", ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "-o", serverOptions, "start"], root);
      return `postgres://app@127.0.0.1:${port}/postgres`;
    } catch (error) {
      lastError = error; // most likely the port was taken between freePort() and start; try another
    }
  }
  let serverLog = "";
  try {
    serverLog = readFileSync(logFile, "utf8").split("\n").slice(-30).join("\n");
  } catch {}
  throw new Error(`pg_ctl start failed: ${(lastError as Error).message}\n${serverLog}`);
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** (Re)creates the template database and applies the migrations to it once. */
async function prepareTemplate(adminUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    // A leftover from an earlier run against BERTH_TEST_DATABASE_URL is replaced.
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  const database = await createDatabase({ driver: "postgres", url: withDatabase(adminUrl, TEMPLATE_DB), poolSize: 1 });
  try {
    await database.migrate();
  } finally {
    await database.close();
  }
}

async function writePgliteDump(dir: string): Promise<string> {
  const database = await createDatabase({ driver: "pglite", url: "memory://" });
  try {
    await database.migrate();
    const dump = await database.dumpDataDir!();
    const path = join(dir, "pglite-migrated.tar");
    await writeFile(path, new Uint8Array(await dump.arrayBuffer()));
    return path;
  } finally {
    await database.close();
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  sweepOrphans();
  const external = process.env.BERTH_TEST_DATABASE_URL;
  const scratch = await makeOwnedTempDir(SCRATCH_DIR_PREFIX);
  const pgRoot = external ? undefined : await makeOwnedTempDir(PG_DIR_PREFIX);
  let proxy: NeonProxy | undefined;

  // Last resort when the process exits without running teardown (Ctrl-C, process.exit).
  const onExit = () => {
    if (pgRoot) destroyPgDirSync(pgRoot);
    rmSync(scratch, { recursive: true, force: true });
  };
  process.once("exit", onExit);

  const teardown = async () => {
    await proxy?.close().catch(() => {});
    if (pgRoot) {
      await runPg("pg_ctl", ["-D", join(pgRoot, "data"), "-m", "immediate", "-w", "stop"], pgRoot).catch(() => {});
      await rm(pgRoot, { recursive: true, force: true });
    }
    await rm(scratch, { recursive: true, force: true });
    process.off("exit", onExit);
  };

  try {
    const postgresReady = (async () => {
      const adminUrl = external ?? (await startLocalPostgres(pgRoot!));
      log(`postgres ready after ${Date.now() - started} ms${external ? " (BERTH_TEST_DATABASE_URL)" : ""}`);
      await prepareTemplate(adminUrl);
      log(`template migrated after ${Date.now() - started} ms`);
      const target = new URL(adminUrl);
      proxy = await startNeonProxy({ host: target.hostname || "127.0.0.1", port: Number(target.port || 5432) });
      return adminUrl;
    })();
    const pgliteReady = writePgliteDump(scratch).then((path) => {
      log(`pglite dump written after ${Date.now() - started} ms`);
      return path;
    });
    // allSettled so a failure on one side still lets the other finish before cleanup.
    const [pgResult, pgliteResult] = await Promise.allSettled([postgresReady, pgliteReady]);
    if (pgResult.status === "rejected") throw pgResult.reason;
    if (pgliteResult.status === "rejected") throw pgliteResult.reason;

    project.provide("postgresAdminUrl", pgResult.value);
    project.provide("postgresTemplateDb", TEMPLATE_DB);
    project.provide("neonProxyPort", proxy!.port);
    project.provide("pgliteDumpPath", pgliteResult.value);
    log(`global setup done in ${Date.now() - started} ms`);
  } catch (error) {
    await teardown();
    throw error;
  }
  return teardown;
}
