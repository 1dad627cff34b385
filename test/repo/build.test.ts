// The compiled build: `npm run build` into a scratch directory inside the repository, then the
// compiled CLI started on plain Node with tsx made unresolvable and TypeScript source refused
// (test/repo/no-tsx.mjs): `agent --help` prints its usage and `serve` answers /readyz on loopback.
// A control run proves the guard bites: the source fallback under the same guard fails.
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runNode } from "../support/berth-process.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const NO_TSX = ["--import", pathToFileURL(join(import.meta.dirname, "no-tsx.mjs")).href];
/** The compiled CLI must not be told to run source (the suite sets BERTH_FROM_SOURCE=1 for everything else). */
const COMPILED_ENV = { BERTH_FROM_SOURCE: undefined, NODE_OPTIONS: undefined };

let outDir: string;

function* javascriptFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* javascriptFiles(path);
    else if (entry.name.endsWith(".js")) yield path;
  }
}

beforeAll(async () => {
  mkdirSync(join(ROOT, ".vitest"), { recursive: true });
  outDir = mkdtempSync(join(ROOT, ".vitest", "build-"));
  await promisify(execFile)("npm", ["run", "build", "--", "--out-dir", outDir], { cwd: ROOT, timeout: 90_000 });
}, 120_000);

afterAll(() => {
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

describe("npm run build", () => {
  it("runs under the suite's rule: spawned CLIs use the source", () => {
    expect(process.env.BERTH_FROM_SOURCE).toBe("1");
  });

  it("emits JavaScript whose relative imports name .js files, with the files read at run time beside their modules", () => {
    for (const asset of ["k8s/sim/protobuf-schema.json", "k8s/sim/openapi/definitions.json", "db/migrations/meta/_journal.json", "db/migrations/0000_init.sql", "bin/berth.js", "src/cli/main.js"]) {
      expect(existsSync(join(outDir, asset)), asset).toBe(true);
    }
    const tsSpecifiers: string[] = [];
    for (const file of javascriptFiles(outDir)) {
      for (const match of readFileSync(file, "utf8").matchAll(/(?:from |import\()\s*"(\.{1,2}\/[^"]*)"/g)) {
        if (!match[1]!.endsWith(".js")) tsSpecifiers.push(`${relative(outDir, file)}: ${match[1]}`);
      }
    }
    expect(tsSpecifiers).toEqual([]);
  });

  it("refuses the source fallback under the guard (the guard works)", async () => {
    const result = await runNode(join(ROOT, "bin", "berth.js"), ["agent", "--help"], { BERTH_FROM_SOURCE: "1", NODE_OPTIONS: undefined }, { nodeArgs: NO_TSX });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("tsx is not installed");
  });

  it("starts `agent --help` from the compiled CLI without tsx", async () => {
    const result = await runNode(join(outDir, "bin", "berth.js"), ["agent", "--help"], COMPILED_ENV, { nodeArgs: NO_TSX });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^usage: berth agent --api URL/);
  });

  it("serves /readyz from the compiled CLI without tsx", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "berth-build-"));
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", BERTH_DATA_DIR: dataDir };
    delete env.BERTH_FROM_SOURCE;
    delete env.NODE_OPTIONS;
    const child = spawn(process.execPath, [...NO_TSX, join(outDir, "bin", "berth.js"), "serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    try {
      let url: string | undefined;
      for (let attempt = 0; attempt < 300 && !url && child.exitCode === null; attempt += 1) {
        url = /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1];
        if (!url) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(url, `no listen line in 30 s:\n${out}\n${err}`).toBeDefined();
      const response = await fetch(`${url}/readyz`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: "ok" });
      expect(err).not.toMatch(/tsx|TypeScript source/);
    } finally {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 45_000);
});
