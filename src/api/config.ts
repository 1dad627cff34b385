// Configuration is parsed once, at start, from the environment; a bad value stops
// start-up with a message naming the variable. Nothing reads process.env later.
import { z } from "zod";
import { parseCorsOrigins } from "./cors.ts";
import { DEFAULT_RETRY_SCHEDULE_SECONDS, parseRetrySchedule } from "../domain/webhook-retry.ts";

const DRIVERS = ["pglite", "postgres", "neon"] as const;

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
    LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "silent"]).default("info"),
    BERTH_WEBHOOK_RETRY_SCHEDULE: parsedWith(parseRetrySchedule, (message) => `comma-separated seconds: ${message}`).optional(),
    BERTH_WEBHOOK_ALLOW_PRIVATE: z
      .enum(["true", "false", "1", "0"], { error: "must be true or false" })
      .default("false")
      .transform((value) => value === "true" || value === "1"),
    // false when a separate `berth migrate` Job owns migrations (deploy/api): replicas then never race them at start.
    BERTH_MIGRATE: z
      .enum(["true", "false", "1", "0"], { error: "must be true or false" })
      .default("true")
      .transform((value) => value === "true" || value === "1"),
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
    webhookRetrySchedule: env.BERTH_WEBHOOK_RETRY_SCHEDULE ?? [...DEFAULT_RETRY_SCHEDULE_SECONDS],
    webhookAllowPrivate: env.BERTH_WEBHOOK_ALLOW_PRIVATE,
    migrateOnStart: env.BERTH_MIGRATE,
    corsOrigins: env.BERTH_CORS_ORIGINS ?? [],
  }));

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
