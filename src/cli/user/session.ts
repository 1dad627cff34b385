// What every user command shares: the common flags (--url, --token, --project, -o),
// where the URL and token come from (flags, then BERTH_URL/BERTH_TOKEN/BERTH_PROJECT,
// then the saved login), the generated client, output in table/json/yaml, and one way
// of reporting errors: a problem's title, detail and each errors[] location on stderr.
import type { parseArgs } from "node:util";
import { stringify as toYaml } from "yaml";
import { BerthApiError, createBerthClient, type BerthClient } from "../../../clients/typescript/src/index.ts";
import { configPath, readSavedConfig } from "./config-file.ts";
import { type OptionSpecs, parseCommandArgs, reportUsage, UsageError } from "../args.ts";

export const OUTPUT_FORMATS = ["table", "json", "yaml"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export const COMMON_OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  project: { type: "string" },
  output: { type: "string", short: "o" },
  help: { type: "boolean", short: "h" },
} as const;

export const COMMON_HELP = `common flags:
  --url URL       API base URL (else BERTH_URL, else the saved login)
  --token KEY     API key (else BERTH_TOKEN, else the saved login)
  --project ID    project for creates and by-name lookups, when the key is not bound to one (else BERTH_PROJECT)
  -o, --output    table (default), json or yaml`;

/** An error the user can fix; printed as "berth: <message>" with its exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** A command-line mistake: "berth <command>: <message>", the usage, exit 2. */
export function usageError(message: string, usage: string): UsageError {
  return new UsageError(message, usage);
}

/** Parses a command's arguments: its own options plus the common ones, positionals anywhere. */
type Parsed<O extends OptionSpecs> = ReturnType<
  typeof parseArgs<{ args: string[]; options: typeof COMMON_OPTIONS & O; allowPositionals: true; strict: true }>
>;

export function parseCommand<const O extends OptionSpecs>(args: string[], options: O, usage: string): Parsed<O> {
  const all = { ...COMMON_OPTIONS, ...options } as typeof COMMON_OPTIONS & O;
  const parsed = parseCommandArgs(args, { name: "", usage, options: all, positionals: true }) as Parsed<O>;
  const output = (parsed.values as CommonValues).output ?? "table";
  if (!(OUTPUT_FORMATS as readonly string[]).includes(output)) {
    throw usageError(`-o must be one of ${OUTPUT_FORMATS.join(", ")} (got "${output}")`, usage);
  }
  return parsed;
}

export interface Session {
  client: BerthClient;
  url: string;
  /** --project, BERTH_PROJECT or the saved one. */
  project: string | undefined;
  output: OutputFormat;
  /** A human status line: stdout for tables, stderr when stdout carries JSON or YAML. */
  say(text: string): void;
  /** Prints an API body as JSON or YAML (the body exactly as the API sent it). */
  printBody(body: unknown): void;
}

export interface CommonValues {
  url?: string;
  token?: string;
  project?: string;
  output?: string;
}

export function openSession(values: CommonValues, env: Record<string, string | undefined> = process.env): Session {
  const saved = readSavedConfig(configPath(env));
  const url = values.url ?? (env.BERTH_URL || undefined) ?? saved.url;
  const token = values.token ?? (env.BERTH_TOKEN || undefined) ?? saved.token;
  if (!url) throw new CliError("no API URL: run `berth login --url URL --token KEY`, or set BERTH_URL or --url", 2);
  if (!token) throw new CliError("no API key: run `berth login --url URL --token KEY`, or set BERTH_TOKEN or --token", 2);
  const output = (values.output ?? "table") as OutputFormat;
  return {
    client: createBerthClient({ baseUrl: url, token, fetch: fetchNamingUrl(url) }),
    url,
    project: values.project ?? (env.BERTH_PROJECT || undefined) ?? saved.project,
    output,
    say: (text) => {
      (output === "table" ? process.stdout : process.stderr).write(text + "\n");
    },
    printBody: (body) => {
      process.stdout.write(formatBody(body, output === "yaml" ? "yaml" : "json"));
    },
  };
}

/**
 * A network failure (refused, reset, DNS) with the URL that could not be reached. Still a
 * TypeError, as fetch's own, so the client's retries treat it as one.
 */
export class Unreachable extends TypeError {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach the API at ${url}: ${reason} (is berth up running? set BERTH_URL)`);
  }
}

/** fetch whose network failures name the API's URL. */
export function fetchNamingUrl(url: string) {
  const base = url.replace(/\/+$/, "");
  return async (request: Request, init?: RequestInit): Promise<Response> => {
    try {
      return await globalThis.fetch(request, init);
    } catch (error) {
      if (!(error instanceof TypeError) || error instanceof Unreachable) throw error;
      const cause = (error as { cause?: { message?: string; code?: string } }).cause;
      throw new Unreachable(base, cause?.code ?? cause?.message ?? error.message);
    }
  };
}

export function formatBody(body: unknown, format: "json" | "yaml"): string {
  return format === "yaml" ? toYaml(body) : JSON.stringify(body, null, 2) + "\n";
}

/** Runs `berth <command>` and turns whatever it throws into stdout/stderr lines and an exit code. */
export async function runCommand(command: string, run: () => Promise<void>): Promise<number> {
  try {
    await run();
    return 0;
  } catch (error) {
    const usage = reportUsage(`berth ${command}`, error, { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) });
    if (usage !== undefined) return usage;
    process.stderr.write(describeFailure(error).join("\n") + "\n");
    return error instanceof CliError ? error.exitCode : 1;
  }
}

export function describeFailure(error: unknown): string[] {
  if (error instanceof BerthApiError) {
    const problem = error.problem;
    if (!problem) return [`berth: the API answered ${error.status} ${error.response.statusText}`.trimEnd()];
    const lines = [`berth: ${problem.title} (${problem.status})`];
    if (problem.detail) lines.push(`  ${problem.detail}`);
    for (const line of error.fieldErrors) lines.push(`  ${line}`);
    return lines;
  }
  if (error instanceof CliError || error instanceof Unreachable) return [`berth: ${error.message}`];
  return [`berth: ${(error as Error)?.message ?? String(error)}`];
}

