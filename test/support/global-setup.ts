// Vitest globalSetup: runs once in the main process before any test file.
//
// - Starts ONE throwaway PostgreSQL 15 in a temp dir (or uses BERTH_TEST_DATABASE_URL),
//   creates the template database `berth_template` and migrates it once; each test then
//   clones it with `CREATE DATABASE … TEMPLATE` (see databases.ts).
// - Starts a WebSocket→TCP proxy so the Neon driver can reach that server.
// - Migrates ONE in-memory PGlite and writes `dumpDataDir()` to a temp file; tests load it
//   instead of migrating again (creating a PGlite takes seconds).
//
// Temp dirs carry an `owner.pid` file; a later run stops and removes those whose owner
// died without tearing down (SIGKILL, Ctrl-C during setup), so servers never pile up.
import { readFileSync, readdirSync, rmSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { createDatabase } from "../../db/client.ts";
import { startNeonProxy } from "./neon-proxy.ts";
import { OWNER_FILE, PG_DIR_PREFIX, startPostgresServer, stopAndRemoveSync, type PostgresServer } from "./postgres-server.ts";
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

const TEMPLATE_DB = "berth_template";
const SCRATCH_DIR_PREFIX = "berth-test-";

function log(message: string): void {
  if (process.env.BERTH_TEST_QUIET !== "1") console.log(`[global-setup] ${message}`);
}

/** A PostgreSQL binary, run as the `postgres` user when we are root (initdb/pg_ctl refuse root). */
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
    stopAndRemoveSync(root);
  }
}

async function makeOwnedTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await writeFile(join(dir, OWNER_FILE), String(process.pid));
  return dir;
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
  let server: PostgresServer | undefined;
  let proxy: NeonProxy | undefined;

  // Last resort when the process exits without running teardown (Ctrl-C, process.exit);
  // the server registers its own exit hook.
  const onExit = () => rmSync(scratch, { recursive: true, force: true });
  process.once("exit", onExit);

  const teardown = async () => {
    await proxy?.close().catch(() => {});
    await server?.stop();
    await rm(scratch, { recursive: true, force: true });
    process.off("exit", onExit);
  };

  try {
    const postgresReady = (async () => {
      if (!external) server = await startPostgresServer();
      const adminUrl = external ?? server!.adminUrl;
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
