// Several real `berth serve` processes on ONE fresh PostgreSQL database, behind a round-robin
// proxy on loopback: how deploy/api runs the API (replicas behind a Service). Contracts that
// must hold across instances are tested through `cluster.url`, as a client would see them.
//
//   const cluster = await startApiCluster();            // 2 instances, BERTH_MIGRATE=false
//   try { await cluster.call("POST", "/v1/deployments", { body }); … } finally { await cluster.close(); }
//
// Each instance keeps its port for the cluster's life, so one can be killed (SIGKILL: a crash)
// and started again at the same address; the proxy skips it while its port refuses
// connections. `via: n` pins one request to instance n (through the proxy), for tests that
// must know which instance served what.
import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { createDatabase } from "../../db/client.ts";
import { openTestDatabase, withAdmin, type TestDatabase } from "./databases.ts";
import { freePort, SERVE_ADMIN_TOKEN, startBerthServer, type BerthServer } from "./berth-process.ts";
import { PIN_HEADER, startRoundRobinProxy, type RoundRobinProxy } from "./round-robin-proxy.ts";
import { TEST_SECRET_KEY } from "./secret-key.ts";

export interface ApiClusterOptions {
  /** How many `berth serve` processes (default 2). */
  instances?: number;
  /** BERTH_MIGRATE for every instance (default false: the database is migrated already, as by deploy/api's Job). */
  migrate?: boolean;
  /**
   * "migrated" (default): a copy of the migrated template. "empty": a new database without a
   * single table, for instances that migrate it themselves (with `migrate: true`).
   */
  database?: "migrated" | "empty";
  /** More environment for every instance (e.g. a rate limit); wins over the defaults below. */
  env?: Record<string, string>;
}

export interface ApiInstance {
  index: number;
  /** Its own address (not the proxy's); the same after a restart. */
  url: string;
  running(): boolean;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful stop) and wait for the exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port and database; resolves once it listens. */
  start(): Promise<void>;
  /** Its stdout and stderr so far (the current process's). */
  logs(): string;
}

export interface ClusterCallOptions {
  /** Bearer token (default: the admin token); null sends none. */
  token?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  /** Pin the request to this instance (default: round-robin). */
  via?: number;
}

export interface ClusterAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON when the answer is JSON, otherwise the text. */
  body: any;
}

export interface ApiCluster {
  /** The proxy's address: what clients use. */
  url: string;
  proxy: RoundRobinProxy;
  instances: ApiInstance[];
  /** The one database every instance runs on (a test may read it directly). */
  database: TestDatabase;
  adminToken: string;
  defaultProjectId: string;
  /** One request through the proxy, body read. */
  call(method: string, path: string, options?: ClusterCallOptions): Promise<ClusterAnswer>;
  /** A request through the proxy whose body is left to the caller (streams). */
  open(path: string, options?: ClusterCallOptions & { signal?: AbortSignal }): Promise<Response>;
  close(): Promise<void>;
}

/**
 * Defaults every instance gets: the receivers of webhook tests are on loopback, and a short
 * delivery lease, so deliveries a killed instance held come due again within seconds — yet long
 * enough that a live instance records a send (to a receiver answering in under a second) well
 * within it on a busy machine, so no live instance's send is ever taken over and repeated.
 */
const INSTANCE_ENV = {
  // One key for every instance: what one seals (webhook secrets, replays) the others open.
  BERTH_SECRET_KEY: TEST_SECRET_KEY,
  BERTH_WEBHOOK_ALLOW_PRIVATE: "true",
  BERTH_WEBHOOK_ALLOW_HTTP: "true",
  BERTH_WEBHOOK_LEASE_SECONDS: "8",
};

function requestInit(options: ClusterCallOptions, method = "GET"): RequestInit {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? SERVE_ADMIN_TOKEN : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (options.via !== undefined) headers[PIN_HEADER] = String(options.via);
  if (options.body !== undefined) headers["content-type"] = "application/json";
  return { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) };
}

async function readAnswer(response: Response): Promise<ClusterAnswer> {
  const text = await response.text();
  const json = /json/.test(response.headers.get("content-type") ?? "");
  return { status: response.status, headers: response.headers, body: json && text ? JSON.parse(text) : text };
}

export async function startApiCluster(options: ApiClusterOptions = {}): Promise<ApiCluster> {
  const count = options.instances ?? 2;
  const database = options.database === "empty" ? await openEmptyDatabase() : await openTestDatabase("postgres", { poolSize: 4 });
  const env = {
    ...INSTANCE_ENV,
    DATABASE_URL: database.url,
    BERTH_MIGRATE: options.migrate ? "true" : "false",
    ...options.env,
  };
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
  const instances = ports.map((port, index) => instanceOn(index, port, env));
  let proxy: RoundRobinProxy | undefined;
  try {
    await Promise.all(instances.map((instance) => instance.start()));
    proxy = await startRoundRobinProxy(instances.map((instance) => instance.url));
  } catch (error) {
    await Promise.all(instances.map((instance) => instance.kill()));
    await database.close();
    throw error;
  }
  const url = proxy.url;
  const call = async (method: string, path: string, callOptions: ClusterCallOptions = {}) =>
    readAnswer(await fetch(`${url}${path}`, requestInit(callOptions, method)));
  const projects = await call("GET", "/v1/projects");
  const defaultProjectId = projects.body.items?.find((p: { name: string }) => p.name === "default")?.id as string;
  return {
    url,
    proxy,
    instances,
    database,
    adminToken: SERVE_ADMIN_TOKEN,
    defaultProjectId,
    call,
    open: (path, callOptions = {}) => fetch(`${url}${path}`, { ...requestInit(callOptions), signal: callOptions.signal }),
    async close() {
      await proxy!.close();
      await Promise.all(instances.map((instance) => instance.stop()));
      await database.close();
    },
  };
}

/** A new database with nothing in it (dropped again by close()). */
async function openEmptyDatabase(): Promise<TestDatabase> {
  const name = `t_empty_${randomBytes(8).toString("hex")}`;
  await withAdmin((client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(inject("postgresAdminUrl"));
  url.pathname = `/${name}`;
  const database = await createDatabase({ driver: "postgres", url: url.toString(), poolSize: 4 });
  return {
    ...database,
    url: url.toString(),
    close: async () => {
      await database.close();
      await withAdmin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}

function instanceOn(index: number, port: number, env: Record<string, string>): ApiInstance {
  let server: BerthServer | undefined;
  const running = () => server !== undefined && server.child.exitCode === null && server.child.signalCode === null;
  return {
    index,
    url: `http://127.0.0.1:${port}`,
    running,
    async kill() {
      await server?.kill();
      await server?.stop();
      server = undefined;
    },
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      if (running()) throw new Error(`instance ${index} is already running`);
      server = await startBerthServer(env, { port });
    },
    logs: () => server?.logs() ?? "",
  };
}
