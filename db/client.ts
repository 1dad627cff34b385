// Builds the drizzle database for one of three drivers behind one type: PGlite
// (embedded, the default), node-postgres, or Neon's WebSocket Pool. Drivers are
// imported lazily so a runtime only loads the one it uses.
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import * as schema from "./schema.ts";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type DatabaseDriver = "pglite" | "postgres" | "neon";

export interface NeonSocketOptions {
  /** Route the Neon WebSocket through a local proxy, e.g. `() => "127.0.0.1:5433/v1"` in tests. */
  wsProxy?: (host: string, port: number | string) => string;
  useSecureWebSocket?: boolean;
  pipelineConnect?: false | "password";
  pipelineTLS?: boolean;
  forceDisablePgSSL?: boolean;
}

export interface DatabaseOptions {
  driver: DatabaseDriver;
  /** PostgreSQL/Neon connection string; for PGlite a data directory path or `memory://`. */
  url: string;
  /** A PGlite data dump to start from (tests load a migrated dump instead of migrating again). */
  pgliteLoadDataDir?: Blob;
  neon?: NeonSocketOptions;
  /** Maximum pool size for postgres/neon. */
  poolSize?: number;
}

export interface Database {
  db: Db;
  driver: DatabaseDriver;
  /** Runs a trivial query; used by /readyz. */
  ping(): Promise<void>;
  /** Applies the committed migrations in db/migrations (idempotent). */
  migrate(): Promise<void>;
  close(): Promise<void>;
  /** PGlite only: a tarball of the data directory, so tests can start from a migrated copy. */
  dumpDataDir?(): Promise<Blob>;
  /**
   * Calls `onNotify` with the payload and channel on every NOTIFY on `channel` (one name, or
   * several on one session), and once per channel with "" after a reconnect, in case one was
   * missed; resolves to a function that stops listening. Absent where the driver has no
   * lasting session to listen on (Neon): callers poll instead.
   */
  listen?(channel: string | readonly string[], onNotify: (payload: string, channel: string) => void): Promise<() => Promise<void>>;
}

// fileURLToPath, not URL#pathname: the latter keeps %20 etc., so a checkout path with a
// space or non-ASCII character made migrate() look for a folder that does not exist.
const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));

/** Arbitrary, fixed: the advisory lock key that serializes migrations across processes. */
const MIGRATION_LOCK = 727174;

interface LockConnection {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  end(): Promise<void>;
}

/**
 * Runs `migrate` holding a session-level advisory lock on a connection of its own (not one of
 * the pool's, which migrate itself needs): instances started at once on one database (deploy/api's
 * replicas with BERTH_MIGRATE=true) migrate one after another, the later ones finding nothing to do,
 * instead of racing to create the same tables. Closing the connection releases the lock, also on a crash.
 */
async function migrateLocked(connection: LockConnection, migrate: () => Promise<void>): Promise<void> {
  await connection.connect();
  try {
    await connection.query(`select pg_advisory_lock(${MIGRATION_LOCK})`);
    await migrate();
  } finally {
    await connection.end().catch(() => {});
  }
}

export function inferDriver(url: string | undefined): DatabaseDriver {
  if (!url) return "pglite";
  if (/^postgres(ql)?:\/\//.test(url)) {
    return /\.neon\.tech([:/]|$)/.test(new URL(url).hostname) ? "neon" : "postgres";
  }
  return "pglite";
}

export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  switch (options.driver) {
    case "pglite":
      return createPglite(options);
    case "postgres":
      return createNodePostgres(options);
    case "neon":
      return createNeon(options);
  }
}

async function createPglite(options: DatabaseOptions): Promise<Database> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  const { migrate } = await import("drizzle-orm/pglite/migrator");
  const client = new PGlite(options.url, options.pgliteLoadDataDir ? { loadDataDir: options.pgliteLoadDataDir } : {});
  await client.waitReady;
  const db = drizzle(client, { schema });
  return {
    db: db as unknown as Db,
    driver: "pglite",
    ping: async () => void (await client.query("select 1")),
    migrate: () => migrate(db, { migrationsFolder }),
    close: () => client.close(),
    listen: async (channel, onNotify) => {
      const stops: Array<() => Promise<void>> = [];
      for (const name of typeof channel === "string" ? [channel] : channel) {
        stops.push(await client.listen(name, (payload) => onNotify(payload ?? "", name)));
      }
      return async () => void (await Promise.all(stops.map((stop) => stop())));
    },
    dumpDataDir: async () => (await client.dumpDataDir("none")) as Blob,
  };
}

async function createNodePostgres(options: DatabaseOptions): Promise<Database> {
  const { default: pg } = await import("pg");
  const { drizzle } = await import("drizzle-orm/node-postgres");
  const { migrate } = await import("drizzle-orm/node-postgres/migrator");
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10 });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on("error", () => {});
  const db = drizzle(pool, { schema });
  return {
    db: db as unknown as Db,
    driver: "postgres",
    ping: async () => void (await pool.query("select 1")),
    migrate: () => migrateLocked(new pg.Client({ connectionString: options.url }), () => migrate(db, { migrationsFolder })),
    close: () => pool.end(),
    listen: (channel, onNotify) => listenWithPg(pg.Client, options.url, channel, onNotify),
  };
}

/**
 * LISTEN on a dedicated connection (a pooled one would be handed to other queries). A lost
 * connection is replaced after a second; `onNotify` is called on reconnecting because
 * notifications sent meanwhile are gone.
 */
async function listenWithPg(
  Client: typeof import("pg").Client,
  url: string,
  channel: string | readonly string[],
  onNotify: (payload: string, channel: string) => void,
): Promise<() => Promise<void>> {
  const channels = typeof channel === "string" ? [channel] : [...channel];
  const missedAll = () => channels.forEach((name) => onNotify("", name));
  let closed = false;
  let current: import("pg").Client | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const connect = async (): Promise<void> => {
    const client = new Client({ connectionString: url });
    client.on("notification", (message) => onNotify(message.payload ?? "", message.channel));
    client.on("error", () => {});
    client.on("end", () => {
      if (closed || current !== client) return;
      current = undefined;
      reconnect();
    });
    try {
      await client.connect();
      for (const name of channels) await client.query(`LISTEN "${name.replace(/"/g, '""')}"`);
      if (closed) return void (await client.end());
      current = client;
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
  };
  const reconnect = (): void => {
    if (closed) return;
    retry = setTimeout(() => connect().then(missedAll, reconnect), 1000);
  };
  await connect();
  return async () => {
    closed = true;
    clearTimeout(retry);
    await current?.end().catch(() => {});
  };
}

async function createNeon(options: DatabaseOptions): Promise<Database> {
  const { Client, Pool, neonConfig } = await import("@neondatabase/serverless");
  const { drizzle } = await import("drizzle-orm/neon-serverless");
  const { migrate } = await import("drizzle-orm/neon-serverless/migrator");
  if (typeof globalThis.WebSocket === "undefined") {
    neonConfig.webSocketConstructor = (await import("ws")).default as unknown as typeof WebSocket;
  }
  Object.assign(neonConfig, options.neon ?? {});
  const pool = new Pool({ connectionString: options.url, max: options.poolSize ?? 10 });
  pool.on("error", () => {});
  const db = drizzle(pool, { schema });
  return {
    db: db as unknown as Db,
    driver: "neon",
    ping: async () => void (await pool.query("select 1")),
    migrate: () => migrateLocked(new Client({ connectionString: options.url }), () => migrate(db, { migrationsFolder })),
    close: () => pool.end(),
  };
}
