// argparse-like reading of an engine command line: `--flag value`, `--flag=value`, `--no-flag`,
// nargs="+" flags, `_` for `-` in names, repeated flags (last wins) and vLLM's dotted config keys
// (`--kv-transfer-config.kv_role kv_both`). It knows which flags take no value; nothing else.

export class UsageError extends Error {}

/** Flags that take no value (argparse store_true / BooleanOptionalAction) in either engine. */
const BOOLEAN_FLAGS = new Set([
  "--enable-prefix-caching", "--enable-expert-parallel", "--enable-eplb", "--enable-elastic-ep", "--headless",
  "--trust-remote-code", "--enforce-eager", "--enable-chunked-prefill", "--enable-server-load-tracking",
  "--enable-request-id-headers", "--enable-prompt-tokens-details", "--disable-log-requests", "--disable-log-stats",
  "--enable-log-requests", "--data-parallel-hybrid-lb", "--data-parallel-external-lb",
  "--data-parallel-multi-port-external-lb", "--enable-auto-tool-choice", "--enable-sleep-mode", "--disable-fastapi-docs",
  "--enable-metrics", "--skip-server-warmup", "--disable-radix-cache", "--enable-dp-attention", "--disable-cuda-graph",
  "--enable-torch-compile", "--enable-metrics-for-all-schedulers", "--enable-cache-report", "--log-requests",
  "--disaggregation-decode-enable-radix-cache", "--enable-mfu-metrics", "--kv-cache-metrics", "--async-scheduling",
]);

/** Flags that take one or more values (argparse nargs="+"). */
const MULTI_VALUE_FLAGS = new Set(["--served-model-name", "--api-key"]);

export interface FlagValues {
  values: Map<string, string[]>;
  positionals: string[];
}

export function readFlags(tokens: readonly string[], aliases: Readonly<Record<string, string>>): FlagValues {
  const values = new Map<string, string[]>();
  const positionals: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (!token.startsWith("-") || token === "-") {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf("=");
    const name = eq >= 0 ? token.slice(0, eq) : token;
    const inline = eq >= 0 ? token.slice(eq + 1) : undefined;
    const [rawBase, ...path] = name.split(".");
    // argparse in vLLM accepts `_` for `-` in flag names (not in dotted config keys).
    const base = rawBase!.startsWith("--") ? "--" + rawBase!.slice(2).replaceAll("_", "-") : rawBase!;
    const canonical = aliases[base] ?? base;
    const key = path.length > 0 ? `${canonical}.${path.join(".")}` : canonical;
    if (inline !== undefined) {
      values.set(key, [inline]);
      continue;
    }
    if (canonical.startsWith("--no-") && BOOLEAN_FLAGS.has("--" + canonical.slice(5))) {
      values.set("--" + canonical.slice(5), ["false"]);
      continue;
    }
    if (BOOLEAN_FLAGS.has(canonical) && path.length === 0) {
      values.set(key, ["true"]);
      continue;
    }
    const collected: string[] = [];
    while (i + 1 < tokens.length && !isFlag(tokens[i + 1]!)) {
      collected.push(tokens[++i]!);
      if (!MULTI_VALUE_FLAGS.has(canonical)) break;
    }
    values.set(key, collected.length > 0 ? collected : ["true"]);
  }
  return { values, positionals };
}

function isFlag(token: string): boolean {
  return token.startsWith("-") && token !== "-" && !/^-\d/.test(token);
}

export class FlagReader {
  private readonly read = new Set<string>();
  constructor(private readonly flags: FlagValues) {}

  string(name: string): string | undefined {
    this.read.add(name);
    return this.flags.values.get(name)?.at(-1);
  }

  list(name: string): string[] | undefined {
    this.read.add(name);
    return this.flags.values.get(name);
  }

  int(name: string, fallback: number): number;
  int(name: string): number | undefined;
  int(name: string, fallback?: number): number | undefined {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value)) throw new UsageError(`${name} expects an integer, got ${raw}`);
    return value;
  }

  number(name: string, fallback: number): number {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value)) throw new UsageError(`${name} expects a number, got ${raw}`);
    return value;
  }

  bool(name: string, fallback = false): boolean {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    return raw !== "false" && raw !== "0";
  }

  /** A JSON config flag merged with its dotted sub-keys. */
  json(name: string): Record<string, unknown> | undefined {
    const raw = this.string(name);
    let config: Record<string, unknown> | undefined;
    if (raw !== undefined) {
      try {
        config = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        throw new UsageError(`${name} expects JSON, got ${raw}`);
      }
    }
    for (const [key, values] of this.flags.values) {
      if (!key.startsWith(name + ".")) continue;
      this.read.add(key);
      config ??= {};
      let target = config;
      const path = key.slice(name.length + 1).split(".");
      for (const part of path.slice(0, -1)) target = (target[part] ??= {}) as Record<string, unknown>;
      const value = values.at(-1)!;
      let parsed: unknown = value;
      try {
        parsed = JSON.parse(value);
      } catch {
        // a plain string
      }
      target[path.at(-1)!] = parsed;
    }
    return config;
  }

  unread(): string[] {
    return [...this.flags.values.keys()].filter((key) => !this.read.has(key));
  }
}
