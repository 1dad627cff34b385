// The shared argument helper: --help anywhere before `--`, node:util's parse errors as one
// short line naming what was written, --port values, and what a command ends with.
import { describe, expect, it } from "vitest";
import { asksForHelp, HelpRequested, parseCommandArgs, parsePort, reportUsage, UsageError } from "../../src/cli/args.ts";

const USAGE = "usage: berth demo [--out FILE] [--reset] [-o FORMAT]";
const spec = {
  name: "berth demo",
  usage: USAGE,
  options: { out: { type: "string" }, reset: { type: "boolean" }, output: { type: "string", short: "o" } },
} as const;

const failure = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe("parseCommandArgs", () => {
  it.each([
    [["--bogus"], "unknown option --bogus"],
    [["-z"], "unknown option -z"],
    [["--out"], "option --out needs a value"],
    [["-o"], "option --output needs a value"],
    [["--reset=yes"], "option --reset takes no value"],
    [["--out", "--reset"], "option --out needs a value (write --out=VALUE for a value starting with '-')"],
    [["stray"], 'unexpected argument "stray"'],
  ])("%j → %s", (args, message) => {
    const error = failure(() => parseCommandArgs(args, spec));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toBe(message);
    expect((error as UsageError).usage).toBe(USAGE);
  });

  it.each([[["--help"]], [["-h"]], [["--out", "x", "--help"]], [["--bogus", "-h"]], [["stray", "--help"]]])("%j asks for the usage, before any check", (args) => {
    const error = failure(() => parseCommandArgs(args, spec));
    expect(error).toBeInstanceOf(HelpRequested);
    expect((error as HelpRequested).usage).toBe(USAGE);
  });

  it("parses known options, and positionals when the command takes them", () => {
    expect(parseCommandArgs(["--out", "f.json", "--reset", "-o", "yaml"], spec).values).toEqual({ out: "f.json", reset: true, output: "yaml" });
    expect(parseCommandArgs(["a", "--reset", "b"], { ...spec, positionals: true }).positionals).toEqual(["a", "b"]);
  });
});

describe("asksForHelp", () => {
  it.each([
    [["--help"], true],
    [["-h"], true],
    [["run", "--", "--help"], false],
    [["--", "-h"], false],
    [["--helpful"], false],
    [[], false],
  ])("%j → %s", (args, expected) => expect(asksForHelp(args)).toBe(expected));
});

describe("parsePort", () => {
  it.each([
    ["8080", 8080],
    ["0", 0],
    ["65535", 65535],
    [undefined, undefined],
  ])("%s → %s", (text, port) => expect(parsePort(text, USAGE)).toBe(port));

  it.each(["65536", "-1", "80a", "", "1e3", " 80"])("refuses %j naming the flag and the range", (text) => {
    const error = failure(() => parsePort(text, USAGE));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe(`--port must be a port number from 0 to 65535 (got "${text}")`);
  });
});

describe("reportUsage", () => {
  const capture = () => {
    const out = { stdout: "", stderr: "" };
    return { out, io: { stdout: (t: string) => void (out.stdout += t), stderr: (t: string) => void (out.stderr += t) } };
  };

  it("prints a usage request on stdout and answers 0", () => {
    const { out, io } = capture();
    expect(reportUsage("berth demo", new HelpRequested(USAGE), io)).toBe(0);
    expect(out).toEqual({ stdout: `${USAGE}\n`, stderr: "" });
  });

  it("prints a mistake as one line naming the command, then the usage, on stderr, and answers 2", () => {
    const { out, io } = capture();
    expect(reportUsage("berth demo", new UsageError("unknown option --bogus", USAGE), io)).toBe(2);
    expect(out).toEqual({ stdout: "", stderr: `berth demo: unknown option --bogus\n\n${USAGE}\n` });
  });

  it("leaves any other error to the caller", () => {
    const { out, io } = capture();
    expect(reportUsage("berth demo", new Error("boom"), io)).toBeUndefined();
    expect(out).toEqual({ stdout: "", stderr: "" });
  });
});
