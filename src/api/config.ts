// Configuration is parsed once, at start, from the environment; a bad value stops
// start-up with a message naming the variable. Nothing reads process.env later.
import { z } from "zod";
import { parseCidrList } from "../domain/client-address.ts";
import { decodeSecretKey } from "../domain/secret-envelope.ts";
import { DEFAULT_RETENTION_WINDOWS, MAX_RETENTION_HOURS } from "../domain/retention.ts";
import { parseCorsOrigins } from "./cors.ts";
import { DEFAULT_RETRY_SCHEDULE_SECONDS, parseRetrySchedule } from "../domain/webhook-retry.ts";
import { DEFAULT_RATE_LIMITS } from "../services/rate-limits/config.ts";

const DRIVERS = ["pglite", "postgres", "neon"] as const;

/** A switch: true/false or 1/0. */
const flag = (fallback: "true" | "false") =>
  z.enum(["true", "false", "1", "0"], { error: "must be true or false" }).default(fallback).transform((value) => value === "true" || value === "1");
/** A whole number of requests, streams or endpoints, with its default (docs/design.md §14.2). */
const count = (min: number, fallback: number, max = 1_000_000) => z.coerce.number().int().min(min).max(max).default(fallback);
/** A server key (BERTH_SECRET_KEY, §14.3) as its 32 bytes; the message says how to make one. */
const secretKeyText = (text: string, ctx: z.RefinementCtx) => {
  try {
    return decodeSecretKey(text);
  } catch (error) {
    ctx.addIssue({ code: "custom", message: (error as Error).message });
    return z.NEVER;
  }
};
/** A retention window: whole hours (1 to ten years), or "never" to keep rows forever (null). */
const retentionHours = z
  .string()
  .regex(/^(never|\d{1,6})$/, `hours (1–${MAX_RETENTION_HOURS}) or "never"`)
  .transform((text) => (text === "never" ? null : Number(text)))
  .refine((hours) => hours === null || (hours >= 1 && hours <= MAX_RETENTION_HOURS), `hours (1–${MAX_RETENTION_HOURS}) or "never"`)
  .optional();
/** A variable read by `parse`; what it throws becomes the variable's message. */
function parsedWith<T>(parse: (text: string) => T, explain: (message: string) => string = (message) => message) {
  return z.string().transform((text, ctx) => {
    try {
      return parse(text);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: explain((error as Error).message) });
      return z.NEVER;
    }
  });
}

export const Config = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(8787),
    HOST: z.string().min(1).default("127.0.0.1"),
    DATABASE_URL: z
      .string()
      .regex(/^(postgres(ql)?:\/\/|memory:\/\/|file:|\/|\.)/, "must be a postgres:// URL, a PGlite directory or memory://")
      .optional(),
    DATABASE_DRIVER: z.enum(DRIVERS).optional(),
    BERTH_DATA_DIR: z.string().min(1).default("./.berth"),
    BERTH_ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
    BERTH_AUTH_CACHE_SECONDS: z.coerce.number().int().min(0).max(300).default(5),
    // How long a rotated agent credential keeps working beside its successor (docs/design.md §14.4).
    BERTH_AGENT_CREDENTIAL_OVERLAP_SECONDS: z.coerce.number().int().min(0).max(7 * 24 * 60 * 60).default(600),
    LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "silent"]).default("info"),
    BERTH_WEBHOOK_RETRY_SCHEDULE: parsedWith(parseRetrySchedule, (message) => `comma-separated seconds: ${message}`).optional(),
    // How long a claimed delivery is this instance's before any instance may send it again (an
    // instance that dies mid-send holds its claims this long). Below the 10 s attempt timeout a
    // slow receiver may get a duplicate, which Standard Webhooks receivers deduplicate anyway.
    BERTH_WEBHOOK_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
    BERTH_WEBHOOK_ALLOW_PRIVATE: z
      .enum(["true", "false", "1", "0"], { error: "must be true or false" })
      .default("false")
      .transform((value) => value === "true" || value === "1"),
    // http:// webhook URLs, for a development install only (receivers get events over cleartext otherwise).
    BERTH_WEBHOOK_ALLOW_HTTP: z
      .enum(["true", "false", "1", "0"], { error: "must be true or false" })
      .default("false")
      .transform((value) => value === "true" || value === "1"),
    // Unset: /metrics is open (deploy/api's NetworkPolicy bounds who reaches it); set: a bearer token is required.
    BERTH_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
    /** Seals stored secrets; without it a PGlite start generates one into BERTH_DATA_DIR, other drivers refuse. */
    BERTH_SECRET_KEY: z.string().transform(secretKeyText).optional(),
    /** Older keys, comma-separated: they still open what they sealed, and start-up re-seals it with BERTH_SECRET_KEY. */
    BERTH_SECRET_KEYS_PREVIOUS: z
      .string()
      .transform((text, ctx) => text.split(",").filter((part) => part.trim() !== "").map((part) => secretKeyText(part, ctx)))
      .optional(),
    // false when a separate `berth migrate` Job owns migrations (deploy/api): replicas then never race them at start.
    BERTH_MIGRATE: z
      .enum(["true", "false", "1", "0"], { error: "must be true or false" })
      .default("true")
      .transform((value) => value === "true" || value === "1"),
    BERTH_RATE_LIMIT: flag("true"),
    BERTH_RATE_LIMIT_WINDOW_SECONDS: count(1, DEFAULT_RATE_LIMITS.windowSeconds, 86_400),
    BERTH_RATE_LIMIT_VIEWER: count(1, DEFAULT_RATE_LIMITS.quotas.viewer),
    BERTH_RATE_LIMIT_EDITOR: count(1, DEFAULT_RATE_LIMITS.quotas.editor),
    BERTH_RATE_LIMIT_ADMIN: count(1, DEFAULT_RATE_LIMITS.quotas.admin),
    BERTH_RATE_LIMIT_AGENT: count(1, DEFAULT_RATE_LIMITS.quotas.agent),
    BERTH_RATE_LIMIT_ADDRESS: count(1, DEFAULT_RATE_LIMITS.quotas.address),
    BERTH_RATE_LIMIT_FAILED_AUTH_CACHE_SECONDS: count(0, DEFAULT_RATE_LIMITS.failedAuthCacheSeconds, 300),
    BERTH_RATE_LIMIT_STREAMS_PER_KEY: count(0, DEFAULT_RATE_LIMITS.streamsPerKey),
    BERTH_RATE_LIMIT_LONG_POLLS_PER_KEY: count(0, DEFAULT_RATE_LIMITS.longPollsPerKey),
    BERTH_RATE_LIMIT_WEBHOOKS_PER_PROJECT: count(1, DEFAULT_RATE_LIMITS.webhooksPerProject),
    BERTH_TRUSTED_PROXIES: z
      .string()
      .default("")
      .transform((text, ctx) => {
        try {
          return parseCidrList(text);
        } catch (error) {
          ctx.addIssue({ code: "custom", message: `comma-separated CIDRs: ${(error as Error).message}` });
          return z.NEVER;
        }
      }),
    BERTH_RETENTION_EVENTS_HOURS: retentionHours,
    BERTH_RETENTION_TOMBSTONES_HOURS: retentionHours,
    BERTH_RETENTION_DELIVERIES_HOURS: retentionHours,
    BERTH_RETENTION_OPERATIONS_HOURS: retentionHours,
    // Exact origins a browser page may call the API from; unset = no CORS headers at all.
    BERTH_CORS_ORIGINS: parsedWith(parseCorsOrigins).optional(),
  })
  .transform((env) => ({
    port: env.PORT,
    host: env.HOST,
    databaseUrl: env.DATABASE_URL,
    databaseDriver: env.DATABASE_DRIVER,
    dataDir: env.BERTH_DATA_DIR,
    adminToken: env.BERTH_ADMIN_TOKEN,
    logLevel: env.LOG_LEVEL,
    authCacheSeconds: env.BERTH_AUTH_CACHE_SECONDS,
    agentCredentialOverlapSeconds: env.BERTH_AGENT_CREDENTIAL_OVERLAP_SECONDS,
    webhookRetrySchedule: env.BERTH_WEBHOOK_RETRY_SCHEDULE ?? [...DEFAULT_RETRY_SCHEDULE_SECONDS],
    webhookAllowPrivate: env.BERTH_WEBHOOK_ALLOW_PRIVATE,
    webhookAllowHttp: env.BERTH_WEBHOOK_ALLOW_HTTP,
    metricsToken: env.BERTH_METRICS_TOKEN,
    webhookLeaseSeconds: env.BERTH_WEBHOOK_LEASE_SECONDS,
    migrateOnStart: env.BERTH_MIGRATE,
    rateLimits: {
      enabled: env.BERTH_RATE_LIMIT,
      windowSeconds: env.BERTH_RATE_LIMIT_WINDOW_SECONDS,
      quotas: {
        viewer: env.BERTH_RATE_LIMIT_VIEWER,
        editor: env.BERTH_RATE_LIMIT_EDITOR,
        admin: env.BERTH_RATE_LIMIT_ADMIN,
        agent: env.BERTH_RATE_LIMIT_AGENT,
        address: env.BERTH_RATE_LIMIT_ADDRESS,
      },
      failedAuthCacheSeconds: env.BERTH_RATE_LIMIT_FAILED_AUTH_CACHE_SECONDS,
      streamsPerKey: env.BERTH_RATE_LIMIT_STREAMS_PER_KEY,
      longPollsPerKey: env.BERTH_RATE_LIMIT_LONG_POLLS_PER_KEY,
      webhooksPerProject: env.BERTH_RATE_LIMIT_WEBHOOKS_PER_PROJECT,
      trustedProxies: env.BERTH_TRUSTED_PROXIES,
    },
    secretKey: env.BERTH_SECRET_KEY,
    previousSecretKeys: env.BERTH_SECRET_KEYS_PREVIOUS ?? [],
    retentionWindows: {
      eventsHours: pick(env.BERTH_RETENTION_EVENTS_HOURS, DEFAULT_RETENTION_WINDOWS.eventsHours),
      tombstonesHours: pick(env.BERTH_RETENTION_TOMBSTONES_HOURS, DEFAULT_RETENTION_WINDOWS.tombstonesHours),
      deliveriesHours: pick(env.BERTH_RETENTION_DELIVERIES_HOURS, DEFAULT_RETENTION_WINDOWS.deliveriesHours),
      operationsHours: pick(env.BERTH_RETENTION_OPERATIONS_HOURS, DEFAULT_RETENTION_WINDOWS.operationsHours),
    },
    corsOrigins: env.BERTH_CORS_ORIGINS ?? [],
  }));

/** An unset window takes its default; "never" (null) is a choice, not an absence. */
function pick(value: number | null | undefined, fallback: number | null): number | null {
  return value === undefined ? fallback : value;
}

export type Config = z.output<typeof Config>;

/** Parses the environment; on failure throws an Error whose message lists each bad variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const blank = (value: string | undefined) => (value === "" ? undefined : value);
  const input = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, blank(v)]));
  const result = Config.safeParse(input);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`);
  throw new Error(`Invalid configuration:\n${lines.join("\n")}`);
}
