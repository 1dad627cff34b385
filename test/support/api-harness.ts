// An API app on a fresh test database, driven with app.request() (no sockets), with
// a clock the test can move and helpers for the usual set-up (projects, keys).
import type { OpenAPIHono } from "@hono/zod-openapi";
import { createApp, type AppOptions } from "../../src/api/app.ts";
import type { AppDeps, AppEnv, Logger } from "../../src/api/env.ts";
import { bootstrapInstallation } from "../../src/services/bootstrap.ts";
import { DEFAULT_APP_CONFIG, type AppConfig } from "../../src/services/context.ts";
import { NotificationHub } from "../../src/services/notifications/notification-hub.ts";
import type { WebhookTransport } from "../../src/services/webhooks/transport.ts";
import { createDatabase } from "../../db/client.ts";
import { openTestDatabase, type TestDatabase, type TestDriver } from "./databases.ts";
import { TEST_SECRET_KEYS } from "./secret-key.ts";

export { TEST_SECRET_KEY, TEST_SECRET_KEYS } from "./secret-key.ts";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export class TestClock {
  constructor(private current = new Date("2026-11-30T12:00:00.000Z")) {}
  now = () => new Date(this.current.getTime());
  advance(ms: number) {
    this.current = new Date(this.current.getTime() + ms);
  }
  set(at: Date) {
    this.current = new Date(at.getTime());
  }
}

export const silentLogger: Logger & { errors: object[] } = {
  errors: [],
  info: () => {},
  warn: () => {},
  error(obj) {
    this.errors.push(obj);
  },
};

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  /** Raw body text, sent as is (for malformed JSON and the like). */
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestApi {
  app: OpenAPIHono<AppEnv>;
  database: TestDatabase;
  clock: TestClock;
  defaultProjectId: string;
  call(method: string, path: string, options?: CallOptions): Promise<{ status: number; headers: Headers; body: any }>;
  /** Creates a project and returns its id. */
  createProject(name: string, maxGpus?: number): Promise<string>;
  /** Creates an API key and returns its token. */
  createKey(role: "viewer" | "editor" | "admin", projectId?: string): Promise<string>;
  /** Creates a cluster and registers an agent for it; returns the agent token and cluster id. */
  createAgent(name?: string): Promise<{ token: string; clusterId: string }>;
  /** This instance's notification hub (LISTEN on the test database). */
  notifications: NotificationHub;
  close(): Promise<void>;
}

export interface TestApiOptions {
  /** Start the clock here (webhook tests start at the real time: receivers check signature timestamps). */
  clock?: TestClock;
  webhookTransport?: WebhookTransport;
  /** The peer address the app sees (app.request has no socket); absent = unknown. */
  peerAddress?: AppDeps["peerAddress"];
  /** Serve /metrics with these (the entries pass prom-client's); absent = no /metrics route. */
  metrics?: AppOptions["metrics"];
  /** A second API instance on this (postgres) test database, with its own pool and LISTEN session. */
  sameDatabaseAs?: TestDatabase;
  /** How often the hub revalidates open streams' principals (default 5 s). */
  revalidateMs?: number;
}

/** Another connection pool to an existing postgres test database; closing it leaves the database. */
async function openSecondInstance(of: TestDatabase): Promise<TestDatabase> {
  if (of.driver !== "postgres") throw new Error("a second instance needs a postgres test database");
  return { ...(await createDatabase({ driver: "postgres", url: of.url })), url: of.url };
}

export async function createTestApi(driver: TestDriver, config: Partial<AppConfig> = {}, options: TestApiOptions = {}): Promise<TestApi> {
  const database = options.sameDatabaseAs ? await openSecondInstance(options.sameDatabaseAs) : await openTestDatabase(driver);
  const clock = options.clock ?? new TestClock();
  const notifications = new NotificationHub({
    db: database.db,
    clock,
    listen: database.listen?.bind(database),
    revalidateMs: options.revalidateMs,
  });
  const appConfig: AppConfig = { ...DEFAULT_APP_CONFIG, adminToken: ADMIN_TOKEN, secretKeys: TEST_SECRET_KEYS, ...config };
  await bootstrapInstallation({ ctx: { db: database.db, clock, config: appConfig } });
  const app = createApp({
    db: database.db,
    clock,
    config: appConfig,
    logger: silentLogger,
    checkDatabase: () => database.ping(),
    webhookTransport: options.webhookTransport,
    peerAddress: options.peerAddress,
    metrics: options.metrics,
    notifications,
  });

  const call: TestApi["call"] = async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token === undefined ? ADMIN_TOKEN : options.token;
    if (token !== null) headers.Authorization = `Bearer ${token}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["Content-Type"] ??= "application/json";
    }
    const response = await app.request(path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    if (text && /json/.test(response.headers.get("content-type") ?? "")) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed };
  };

  const projects = await call("GET", "/v1/projects");
  const defaultProjectId = projects.body.items.find((p: { name: string }) => p.name === "default").id;

  return {
    app,
    database,
    clock,
    defaultProjectId,
    call,
    async createProject(name, maxGpus) {
      const res = await call("POST", "/v1/projects", { body: { name, ...(maxGpus === undefined ? {} : { maxGpus }) } });
      if (res.status !== 201) throw new Error(`createProject: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.id;
    },
    async createKey(role, projectId) {
      const res = await call("POST", "/v1/api-keys", { body: { name: `${role} key`, role, ...(projectId ? { projectId } : {}) } });
      if (res.status !== 201) throw new Error(`createKey: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.token;
    },
    async createAgent(name = "local") {
      const created = await call("POST", "/v1/clusters", { body: { name } });
      if (created.status !== 201) throw new Error(`createCluster: ${created.status} ${JSON.stringify(created.body)}`);
      const registered = await call("POST", "/v1/agent/register", { token: null, body: { joinToken: created.body.joinToken } });
      if (registered.status !== 201) throw new Error(`register: ${registered.status} ${JSON.stringify(registered.body)}`);
      return { token: registered.body.token, clusterId: created.body.cluster.id };
    },
    notifications,
    async close() {
      await notifications.close();
      await database.close();
    },
  };
}

/** A minimal valid create body; `overrides.spec` replaces the spec whole. */
export function deploymentBody(name: string, overrides: Record<string, unknown> = {}) {
  return {
    name,
    spec: {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "main", resources: { gpus: 1 } }],
    },
    ...overrides,
  };
}
