// The one argument parser of every `berth` command: node:util parseArgs (strict) with a usage
// string per command. `--help`/`-h` anywhere before `--` asks for the usage (stdout, exit 0,
// nothing else happens); an unknown option, a missing value or a stray argument is a
// UsageError whose message names what the user wrote, printed as one line plus the usage
// (stderr, exit 2).
import { parseArgs, type ParseArgsConfig } from "node:util";

export type OptionSpecs = NonNullable<ParseArgsConfig["options"]>;

export interface CommandSpec<O extends OptionSpecs> {
  /** How the command is written, for its messages: "berth openapi", "berth keys". */
  name: string;
  usage: string;
  options: O;
  /** Allow positional arguments (default false: any is "unexpected argument"). */
  positionals?: boolean;
}

/** The user asked for the usage. */
export class HelpRequested extends Error {
  constructor(readonly usage: string) {
    super("help requested");
  }
}

/** A mistake in the command line; `message` is one line naming what was written. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

type Parsed<O extends OptionSpecs> = ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>>;

/** True when `--help` or `-h` comes before any `--`. */
export function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === "--help" || arg === "-h");
}

export function parseCommandArgs<const O extends OptionSpecs>(args: string[], spec: CommandSpec<O>): Parsed<O> {
  if (asksForHelp(args)) throw new HelpRequested(spec.usage);
  let parsed: Parsed<O>;
  try {
    parsed = parseArgs({ args, options: spec.options, allowPositionals: true as const, strict: true as const });
  } catch (error) {
    if (!(error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) throw error;
    throw new UsageError(describeParseError(error as Error), spec.usage);
  }
  if (!spec.positionals && parsed.positionals.length > 0) throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`, spec.usage);
  return parsed;
}

/** node:util's messages ("Unknown option '--bogus'. To specify a positional…") as one short line. */
export function describeParseError(error: Error): string {
  const message = error.message;
  const unknown = /^Unknown option '([^']+)'/.exec(message);
  if (unknown) return `unknown option ${unknown[1]}`;
  const missing = /^Option '(?:-\w, )?(--[\w-]+)[^']*' argument missing/.exec(message);
  if (missing) return `option ${missing[1]} needs a value`;
  const noValue = /^Option '(?:-\w, )?(--[\w-]+)' does not take an argument/.exec(message);
  if (noValue) return `option ${noValue[1]} takes no value`;
  const ambiguous = /^Option '(?:-\w, )?(--[\w-]+)[^']*' argument is ambiguous/.exec(message);
  if (ambiguous) return `option ${ambiguous[1]} needs a value (write ${ambiguous[1]}=VALUE for a value starting with '-')`;
  const positional = /^Unexpected argument '([^']+)'/.exec(message);
  if (positional) return `unexpected argument "${positional[1]}"`;
  return message.split("\n")[0]!;
}

/**
 * What a command's run ends with when it threw: the usage on stdout (exit 0) for --help,
 * "NAME: message" and the usage on stderr (exit 2) for a usage error; undefined otherwise.
 */
export function reportUsage(name: string, error: unknown, io: { stdout(text: string): void; stderr(text: string): void }): number | undefined {
  if (error instanceof HelpRequested) {
    io.stdout(withNewline(error.usage));
    return 0;
  }
  if (error instanceof UsageError) {
    io.stderr(`${name}: ${error.message}\n\n${withNewline(error.usage)}`);
    return 2;
  }
  return undefined;
}

/** A --port value: an integer 0–65535 (0 picks a free port). */
export function parsePort(text: string | undefined, usage: string): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw new UsageError(`--port must be a port number from 0 to 65535 (got "${text}")`, usage);
  return port;
}

const withNewline = (text: string) => (text.endsWith("\n") ? text : text + "\n");
