// Fresh, isolated, already-migrated databases for tests, on each of the three drivers.
//
//   const database = await openTestDatabase("postgres");
//   try { … database.db … } finally { await database.close(); }
//
// postgres/neon: a new database cloned from the migrated template on the shared server
// (dropped again by close()); pglite: a new in-memory PGlite loaded from the migrated dump.
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import pg from "pg";
import { inject } from "vitest";
import { createDatabase } from "../../db/client.ts";
import type { Database, DatabaseDriver } from "../../db/client.ts";

export const DRIVERS = ["pglite", "postgres", "neon"] as const satisfies readonly DatabaseDriver[];
export type TestDriver = (typeof DRIVERS)[number];

export type TestDatabase = Database & { url: string };

export interface OpenTestDatabaseOptions {
  /** Pool size for postgres/neon (default 10). */
  poolSize?: number;
}

let pgliteDump: Promise<Blob> | undefined;

/** The migrated PGlite dump, read once per worker (a Blob is immutable, so it can be shared). */
function loadPgliteDump(): Promise<Blob> {
  pgliteDump ??= readFile(inject("pgliteDumpPath")).then((buffer) => new Blob([new Uint8Array(buffer)]));
  return pgliteDump;
}

/** Runs `fn` with a connection to the test server's admin database. */
export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject("postgresAdminUrl") });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function urlFor(database: string): string {
  const url = new URL(inject("postgresAdminUrl"));
  url.pathname = `/${database}`;
  return url.toString();
}

async function createFromTemplate(name: string): Promise<void> {
  const template = inject("postgresTemplateDb");
  await withAdmin(async (client) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        return;
      } catch (error) {
        // 55006 object_in_use: "source database is being accessed by other users" — a
        // connection to the template has not gone away yet. Rare; wait and retry.
        if ((error as { code?: string }).code !== "55006" || attempt >= 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  });
}

async function dropDatabase(name: string): Promise<void> {
  await withAdmin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

export async function openTestDatabase(driver: TestDriver, options: OpenTestDatabaseOptions = {}): Promise<TestDatabase> {
  if (driver === "pglite") {
    const dump = await loadPgliteDump();
    const url = "memory://";
    const database = await createDatabase({ driver, url, pgliteLoadDataDir: dump });
    return { ...database, url };
  }

  const name = `t_${randomBytes(8).toString("hex")}`;
  await createFromTemplate(name);
  const url = urlFor(name);
  let database: Database;
  try {
    database = await createDatabase({
      driver,
      url,
      poolSize: options.poolSize,
      ...(driver === "neon"
        ? {
            neon: {
              wsProxy: () => `127.0.0.1:${inject("neonProxyPort")}/v1`,
              useSecureWebSocket: false,
              pipelineConnect: false,
              pipelineTLS: false,
              forceDisablePgSSL: true,
            },
          }
        : {}),
    });
  } catch (error) {
    await dropDatabase(name);
    throw error;
  }

  let closed = false;
  return {
    ...database,
    url,
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        await database.close();
      } finally {
        await dropDatabase(name);
      }
    },
  };
}
