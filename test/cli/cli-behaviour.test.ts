// How the real `berth` (bin/berth.js) behaves around its commands: --help and -h on every
// command and subcommand print the usage on stdout with exit 0 and start nothing (the port
// stays free, no data directory appears); unknown commands and flags are one line plus the
// usage on stderr with exit 2; a port in use and an unreachable API are one line that says
// what to do; an invalid name in an applied file names the file, the document and the field.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, runBerth, type RunResult } from "../support/berth-process.ts";

const root = mkdtempSync(join(tmpdir(), "berth-cli-behaviour-"));
const dataDir = join(root, "data");
let port: number;

/** `berth args…` with a data directory that must not appear and a port that must stay free. */
const berth = (args: string[], env: Record<string, string | undefined> = {}) =>
  runBerth(
    args,
    {
      BERTH_DATA_DIR: dataDir,
      PORT: String(port),
      DATABASE_URL: "",
      BERTH_URL: `http://127.0.0.1:${port}`,
      BERTH_TOKEN: "bt_not-a-real-token-0123456789",
      XDG_CONFIG_HOME: join(root, "config"),
      ...env,
    },
    { timeoutMs: 60_000 },
  );

/** Runs every command line, a few at a time (each is a Node process). */
async function runAll(lines: string[][], env?: Record<string, string>): Promise<RunResult[]> {
  const results: RunResult[] = new Array(lines.length);
  let next = 0;
  const worker = async () => {
    while (next < lines.length) {
      const index = next++;
      results[index] = await berth(lines[index]!, env);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return results;
}

function listen(onPort: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(onPort, "127.0.0.1", () => resolve(server));
  });
}

const portIsFree = async () => {
  const server = await listen(port).catch(() => undefined);
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  return server !== undefined;
};

beforeAll(async () => {
  port = await freePort();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const COMMANDS = [
  ["up"],
  ["serve"],
  ["migrate"],
  ["openapi"],
  ["router"],
  ["sim-engine"],
  ["agent"],
  ["agent", "install"],
  ["login"],
  ["apply"],
  ["get"],
  ["list"],
  ["describe"],
  ["delete"],
  ["watch"],
  ["scale"],
  ["rollout"],
  ["rollout", "status"],
  ["rollout", "history"],
  ["rollout", "undo"],
  ["plan"],
  ["keys"],
  ["keys", "list"],
  ["keys", "create"],
  ["keys", "revoke"],
  ["clusters"],
  ["clusters", "list"],
  ["clusters", "create"],
  ["clusters", "get"],
  ["webhooks"],
  ["webhooks", "list"],
  ["webhooks", "create"],
  ["webhooks", "delete"],
  ["webhooks", "test"],
];

describe("--help and -h", () => {
  it("print every command's usage on stdout, exit 0, and start nothing", async () => {
    // `-h` is the same branch of the one parser (table-tested in args.test.ts): spawned for
    // the commands with side effects only, to keep this file's process starts down.
    const SHORT_TOO = new Set(["up", "serve", "migrate", "openapi", "agent"]);
    const lines = COMMANDS.flatMap((command) => [[...command, "--help"], ...(SHORT_TOO.has(command.join(" ")) ? [[...command, "-h"]] : [])]);
    const results = await runAll(lines);
    const wrong = lines.flatMap((line, i) => {
      const result = results[i]!;
      const ok = result.code === 0 && /^usage: berth /m.test(result.stdout) && result.stderr === "";
      return ok ? [] : [`berth ${line.join(" ")}: exit ${result.code}\nstdout: ${result.stdout.slice(0, 200)}\nstderr: ${result.stderr.slice(0, 400)}`];
    });
    expect(wrong).toEqual([]);
    // Each command's own usage, not the top-level one.
    results.forEach((result, i) => expect(result.stdout).toContain(lines[i]![0] === "sim-engine" ? "sim-engine" : `berth ${lines[i]![0]}`));
    expect(existsSync(dataDir)).toBe(false);
    expect(await portIsFree()).toBe(true);
  }, 600_000);

  it.each([[[]], [["help"]], [["--help"]], [["-h"]]])("berth %j prints the command list on stdout, exit 0", async (args) => {
    const result = await berth(args);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toMatch(/^usage: berth <command>\n/);
    expect(result.stdout).toContain("agent install --print --api URL");
  });

  it("berth help COMMAND prints that command's usage", async () => {
    const result = await berth(["help", "serve"]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toMatch(/^usage: berth serve \[--port N\]/);
  });
});

describe("mistakes on the command line", () => {
  it.each([
    [["deploy"], 'berth: unknown command "deploy"'],
    [["--bogus"], "berth: unknown option --bogus"],
    [["openapi", "--bogus"], "berth openapi: unknown option --bogus"],
    [["serve", "--bogus"], "berth serve: unknown option --bogus"],
    [["migrate", "now"], 'berth migrate: unexpected argument "now"'],
    [["up", "--bogus"], "berth up: unknown option --bogus"],
    [["up", "--port", "99999"], 'berth up: --port must be a port number from 0 to 65535 (got "99999")'],
    [["agent", "--bogus"], "berth agent: unknown option --bogus"],
    [["agent", "--api", "http://127.0.0.1:9", "--token", "ba_x", "--ec-cache-size", "lots"], 'berth agent: --ec-cache-size must be a Kubernetes quantity such as 10Gi or 500Mi (got "lots")'],
    [["agent", "--api", "http://127.0.0.1:9", "--token", "ba_x", "--model-egress-cidr", "10.0.0.0"], 'berth agent: --model-egress-cidr must be an IPv4 CIDR such as 0.0.0.0/0 or 10.20.0.0/16 (got "10.0.0.0")'],
    [["agent", "--api", "http://127.0.0.1:9", "--token", "ba_x", "--ingress-namespace", "Ingress_NS"], 'berth agent: --ingress-namespace must be a namespace name (a DNS-1123 label such as ingress-nginx), got "Ingress_NS"'],
    [["agent", "install", "--bogus"], "berth agent install: unknown option --bogus"],
    [["get", "chat", "--bogus"], "berth get: unknown option --bogus"],
    [["keys", "create", "--bogus"], "berth keys: unknown option --bogus"],
    [["clusters", "list", "--limit"], "berth clusters: option --limit needs a value"],
    [["webhooks", "test", "--bogus"], "berth webhooks: unknown option --bogus"],
  ])("berth %j: exit 2, one line naming it, then the usage", async (args, line) => {
    const result = await berth(args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    const [first, blank, usage] = result.stderr.split("\n");
    expect(first).toBe(line);
    expect(blank).toBe("");
    expect(usage).toMatch(/^usage: berth /);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(dataDir)).toBe(false);
  }, 60_000);
});

describe("a port in use", () => {
  let holder: Server;
  beforeAll(async () => {
    holder = await listen(port);
  });
  afterAll(() => new Promise((resolve) => holder.close(resolve)));

  it.each([
    ["--port", (p: number) => ["serve", "--port", String(p)], {}],
    ["PORT", () => ["serve"], {}],
  ])("berth serve (%s): one line naming the port and the way out, exit 1, no stack", async (_how, args, env) => {
    const result = await berth(args(port), { ...env, DATABASE_URL: "memory://", BERTH_ADMIN_TOKEN: "cli-admin-token-0123456789", BERTH_DATA_DIR: join(root, "serve-data") });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`berth serve: port ${port} on 127.0.0.1 is in use; stop what holds it or choose another with --port N (or PORT=N)\n`);
  }, 60_000);
});

describe("an API that cannot be reached", () => {
  it("is named with its URL and what to check", async () => {
    const closed = await freePort();
    const result = await berth(["list"], { BERTH_URL: `http://127.0.0.1:${closed}` });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`berth: cannot reach the API at http://127.0.0.1:${closed}: ECONNREFUSED (is berth up running? set BERTH_URL)\n`);
  }, 60_000);
});

describe("berth apply of a file with an invalid name", () => {
  it("names the file, the document, the field and the rule", async () => {
    const file = join(root, "two.yaml");
    const spec = "spec:\n  model: { name: Qwen/Qwen3-8B }\n  engine: { name: vllm, image: vllm/vllm-openai:v0.11.0 }\n  roles: [{ name: main, resources: { gpus: 1 } }]\n";
    writeFileSync(file, `name: fine\n${spec}---\nname: Bad_Name\n${spec}`);
    const result = await berth(["apply", "-f", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `berth: ${file} (document 2): field "name": "Bad_Name" must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit\n`,
    );
  }, 60_000);
});
