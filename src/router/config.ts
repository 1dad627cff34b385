// `berth router` flags, parsed once at start into a RouterConfig; a bad flag stops start-up
// with a message naming it. Durations are given in seconds and kept in milliseconds.
import { parseArgs } from "node:util";
import { CACHE_AWARE_DEFAULTS } from "./policies/cache-aware.ts";
import { POLICY_NAMES, type PolicyName } from "./policies/index.ts";

export const ENGINES = ["vllm", "sglang"] as const;
export type EngineStyle = (typeof ENGINES)[number];
const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "silent"] as const;

export interface RouterConfig {
  host: string;
  port: number;
  adminToken: string;
  policy: PolicyName;
  /** The PD protocol style. */
  engine: EngineStyle;
  requestTimeoutMs: number;
  cacheThreshold: number;
  balanceAbsThreshold: number;
  balanceRelThreshold: number;
  maxTreeChars: number;
  maxBodyBytes: number;
  /** Attempts per leg across endpoints (1 = no retry). */
  maxAttempts: number;
  holdTimeoutMs: number;
  holdMax: number;
  /** How long to keep retrying an endpoint that answers "currently scaling" (elastic EP). */
  scalingRetryMs: number;
  /** Limit on opening a connection to an endpoint (a dead pod IP may never answer). */
  connectTimeoutMs: number;
  /** How long an endpoint that could not be connected to is skipped while others remain. */
  unreachableCooldownMs: number;
  /** Timeout of each /v1/models read when endpoints are pushed. */
  modelsTimeoutMs: number;
  shutdownGraceMs: number;
  logLevel: (typeof LOG_LEVELS)[number];
}

export const ROUTER_DEFAULTS = {
  host: "127.0.0.1",
  port: 8080,
  policy: "round_robin",
  engine: "vllm",
  requestTimeoutMs: 1_800_000,
  ...CACHE_AWARE_DEFAULTS,
  maxBodyBytes: 8 * 1024 * 1024,
  maxAttempts: 3,
  holdTimeoutMs: 120_000,
  holdMax: 1024,
  scalingRetryMs: 120_000,
  connectTimeoutMs: 5_000,
  unreachableCooldownMs: 5_000,
  modelsTimeoutMs: 3_000,
  shutdownGraceMs: 25_000,
  logLevel: "info",
} as const satisfies Omit<RouterConfig, "adminToken">;

export const ROUTER_USAGE = `usage: berth router --admin-token TOKEN [flags]

  --host H                   address to bind (default 127.0.0.1; 0.0.0.0 or :: binds $BERTH_POD_IP when set)
  --port P                   port (default 8080; 0 picks a free one)
  --admin-token T            bearer token of the /admin API (or $BERTH_ROUTER_ADMIN_TOKEN), ≥ 16 characters
  --admin-token-file FILE    read that token from a file (e.g. a mounted Secret)
  --policy NAME              round_robin | least_load | cache_aware | session_affinity (default round_robin)
  --engine NAME              PD protocol style: vllm | sglang (default vllm)
  --request-timeout S        per-request limit in seconds (default 1800)
  --cache-threshold F        cache_aware: prompt share that must match for a hit (default 0.5)
  --balance-abs-threshold N  cache_aware: in-flight spread past which load wins (default 64)
  --balance-rel-threshold F  cache_aware: and busiest > idlest × F (default 1.5)
  --max-tree-size N          cache_aware: prefix tree bound in characters (default 8388608)
  --max-body-bytes N         largest request body (default 8388608)
  --max-attempts N           tries per request leg across endpoints (default 3)
  --hold-timeout S           scale-to-zero: longest hold of a request (default 120)
  --hold-max N               scale-to-zero: most requests held at once (default 1024)
  --scaling-retry-timeout S  elastic EP: how long to retry an endpoint that is scaling (default 120)
  --connect-timeout S        limit on opening a connection to an endpoint (default 5)
  --unreachable-cooldown S   skip an endpoint this long after it could not be reached (default 5)
  --models-timeout S         timeout of each /v1/models read (default 3)
  --shutdown-grace S         on SIGTERM, wait this long for in-flight requests (default 25)
  --log-level L              trace | debug | info | warn | error | silent (default info)
`;

export class RouterConfigError extends Error {}

export function parseRouterArgs(
  args: string[],
  env: Record<string, string | undefined>,
  readTextFile: (path: string) => string = () => {
    throw new Error("reading files is not available here");
  },
): RouterConfig {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: "string" },
        port: { type: "string" },
        "admin-token": { type: "string" },
        "admin-token-file": { type: "string" },
        policy: { type: "string" },
        engine: { type: "string" },
        "request-timeout": { type: "string" },
        "cache-threshold": { type: "string" },
        "balance-abs-threshold": { type: "string" },
        "balance-rel-threshold": { type: "string" },
        "max-tree-size": { type: "string" },
        "max-body-bytes": { type: "string" },
        "max-attempts": { type: "string" },
        "hold-timeout": { type: "string" },
        "hold-max": { type: "string" },
        "scaling-retry-timeout": { type: "string" },
        "connect-timeout": { type: "string" },
        "unreachable-cooldown": { type: "string" },
        "models-timeout": { type: "string" },
        "shutdown-grace": { type: "string" },
        "log-level": { type: "string" },
      },
    }));
  } catch (error) {
    throw new RouterConfigError((error as Error).message);
  }
  const problems: string[] = [];
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const number = (name: string, fallback: number, min: number, max: number, integer: boolean): number => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
      problems.push(`--${name}: must be ${integer ? "an integer" : "a number"} from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const seconds = (name: string, fallbackMs: number, min: number, max: number) =>
    Math.round(number(name, fallbackMs / 1000, min, max, false) * 1000);
  const choice = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      problems.push(`--${name}: must be one of ${allowed.join(", ")}, got "${raw}"`);
      return fallback;
    }
    return raw as T;
  };

  // A token file is how a pod gets it from a Secret volume without putting it in argv.
  let fromFile: string | undefined;
  const tokenFile = text("admin-token-file");
  if (tokenFile !== undefined) {
    try {
      fromFile = readTextFile(tokenFile).trim();
    } catch (error) {
      problems.push(`--admin-token-file: cannot read "${tokenFile}": ${(error as Error).message}`);
    }
  }
  const adminToken = text("admin-token") ?? fromFile ?? env.BERTH_ROUTER_ADMIN_TOKEN ?? "";
  if (adminToken.length < 16 && tokenFile === undefined) {
    problems.push("--admin-token: required, at least 16 characters (or --admin-token-file, or set BERTH_ROUTER_ADMIN_TOKEN)");
  } else if (adminToken.length < 16 && fromFile !== undefined) {
    problems.push(`--admin-token-file: the token in "${tokenFile}" must be at least 16 characters`);
  }
  let host = text("host") ?? ROUTER_DEFAULTS.host;
  if (host === "") problems.push("--host: must not be empty");
  // Inside a (simulated) pod, "every interface" means the pod's own address.
  if ((host === "0.0.0.0" || host === "::") && env.BERTH_POD_IP) host = env.BERTH_POD_IP;

  const config: RouterConfig = {
    host,
    port: number("port", ROUTER_DEFAULTS.port, 0, 65535, true),
    adminToken,
    policy: choice("policy", POLICY_NAMES, ROUTER_DEFAULTS.policy),
    engine: choice("engine", ENGINES, ROUTER_DEFAULTS.engine),
    requestTimeoutMs: seconds("request-timeout", ROUTER_DEFAULTS.requestTimeoutMs, 0.01, 86_400),
    cacheThreshold: number("cache-threshold", ROUTER_DEFAULTS.cacheThreshold, 0, 1, false),
    balanceAbsThreshold: number("balance-abs-threshold", ROUTER_DEFAULTS.balanceAbsThreshold, 0, 1_000_000, false),
    balanceRelThreshold: number("balance-rel-threshold", ROUTER_DEFAULTS.balanceRelThreshold, 1, 1_000_000, false),
    maxTreeChars: number("max-tree-size", ROUTER_DEFAULTS.maxTreeChars, 1024, 2 ** 31, true),
    maxBodyBytes: number("max-body-bytes", ROUTER_DEFAULTS.maxBodyBytes, 1024, 1024 * 1024 * 1024, true),
    maxAttempts: number("max-attempts", ROUTER_DEFAULTS.maxAttempts, 1, 100, true),
    holdTimeoutMs: seconds("hold-timeout", ROUTER_DEFAULTS.holdTimeoutMs, 0.01, 86_400),
    holdMax: number("hold-max", ROUTER_DEFAULTS.holdMax, 0, 1_000_000, true),
    scalingRetryMs: seconds("scaling-retry-timeout", ROUTER_DEFAULTS.scalingRetryMs, 0, 86_400),
    connectTimeoutMs: seconds("connect-timeout", ROUTER_DEFAULTS.connectTimeoutMs, 0.01, 600),
    unreachableCooldownMs: seconds("unreachable-cooldown", ROUTER_DEFAULTS.unreachableCooldownMs, 0, 3600),
    modelsTimeoutMs: seconds("models-timeout", ROUTER_DEFAULTS.modelsTimeoutMs, 0.01, 600),
    shutdownGraceMs: seconds("shutdown-grace", ROUTER_DEFAULTS.shutdownGraceMs, 0, 3600),
    logLevel: choice("log-level", LOG_LEVELS, ROUTER_DEFAULTS.logLevel),
  };
  if (problems.length > 0) throw new RouterConfigError(`invalid flags:\n  ${problems.join("\n  ")}`);
  return config;
}
