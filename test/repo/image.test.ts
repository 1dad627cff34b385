// The OCI image end to end: scripts/build-image.sh builds it (a clean machine takes minutes; the
// base is cached), then scripts/run-image.sh runs its commands as the image's own user under
// chroot, since no container runtime runs here. podman, buildah and mmdebstrap come from .ci/run;
// without them the build fails and so does this file.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_IMAGE } from "../../k8s/manifests/agent-install.ts";
import { freePort } from "../support/berth-process.ts";

const root = join(import.meta.dirname, "../..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string; license: string };
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
  packages: Record<string, { dev?: boolean }>;
};
const TAG = `ghcr.io/berth/berth:${manifest.version}`;
// A clean build takes about 10 min alone; niced beside the rest of the suite on two cores it gets what is left.
const BUILD_TIMEOUT_MS = 30 * 60_000;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], timeoutMs = 60_000): Run {
  const result = spawnSync(command, args, { cwd: root, encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function runImage(args: string[], timeoutMs = 60_000): Run {
  return run("bash", [join(root, "scripts/run-image.sh"), ...args], timeoutMs);
}

/** A child process whose last 20 kB of stdout and stderr, interleaved, are kept for a failure message. */
function spawnKeepingOutput(command: string, args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  return { child, output: () => output };
}

let scratch: string;
let archive: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "berth-image-test-"));
  archive = join(scratch, "berth.oci.tar");
  // Asynchronous so the worker stays responsive while buildah works; output kept for a failure.
  return new Promise<void>((resolve, reject) => {
    const { child, output } = spawnKeepingOutput("nice", ["bash", join(root, "scripts/build-image.sh"), "--out", archive]);
    const timer = setTimeout(() => child.kill("SIGTERM"), BUILD_TIMEOUT_MS - 10_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`scripts/build-image.sh exited ${code ?? signal}:\n${output()}`));
    });
  });
}, BUILD_TIMEOUT_MS);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

function expectProductionContents(mountPoint: string): void {
  const app = join(mountPoint, "app");
  expect(existsSync(join(app, "dist/src/cli/main.js"))).toBe(true);
  expect(existsSync(join(app, "dist/db/migrations"))).toBe(true);
  expect(existsSync(join(app, "node_modules/hono/package.json"))).toBe(true);
  for (const tool of ["tsx", "vitest", "vite", "esbuild"]) expect(existsSync(join(app, "node_modules", tool)), tool).toBe(false);
  // Every package the lockfile marks dev-only is absent (a devDependency that is also some
  // production package's dependency is not marked dev, and rightly stays).
  const devOnly = Object.entries(lock.packages).filter(([path, entry]) => path && entry.dev).map(([path]) => path);
  expect(devOnly.length).toBeGreaterThan(100);
  expect(devOnly.filter((path) => existsSync(join(app, path)))).toEqual([]);
  const sources = run("find", [app, "-path", join(app, "node_modules"), "-prune", "-o", "-name", "*.ts", "!", "-name", "*.d.ts", "-print"]);
  expect(sources.stdout.trim().split("\n").filter(Boolean)).toEqual([]);
  expect(existsSync(join(app, "src"))).toBe(false);
  // npm stays in the build stages.
  expect(existsSync(join(mountPoint, "usr/local/lib/node_modules/npm"))).toBe(false);
}

describe("the image built by scripts/build-image.sh", () => {
  it("is tagged with the name the agent's manifests use, and its labels describe this release", () => {
    expect(DEFAULT_IMAGE).toBe(TAG);
    const inspect = run("podman", ["image", "inspect", "--format", "{{json .Config}}", TAG]);
    expect(inspect.stderr).toBe("");
    const config = JSON.parse(inspect.stdout) as { User: string; Labels: Record<string, string>; Entrypoint: string[] };
    expect(config.Labels).toMatchObject({
      "org.opencontainers.image.title": "berth",
      "org.opencontainers.image.version": manifest.version,
      "org.opencontainers.image.licenses": manifest.license,
      "org.opencontainers.image.source": expect.stringMatching(/^https:\/\//),
      "org.opencontainers.image.description": expect.stringContaining("large language models"),
    });
    // Numeric, not root: Kubernetes' runAsNonRoot can check it without reading /etc/passwd.
    expect(config.User).toMatch(/^[1-9][0-9]*:[1-9][0-9]*$/);
    expect(config.Entrypoint).toEqual(["node", "/app/bin/berth.js"]);
  });

  it("is written as an OCI archive whose one manifest is that image", () => {
    expect(existsSync(archive)).toBe(true);
    const index = JSON.parse(run("tar", ["-xOf", archive, "index.json"]).stdout) as {
      manifests: { digest: string; annotations: Record<string, string> }[];
    };
    expect(index.manifests).toHaveLength(1);
    expect(index.manifests[0]!.annotations["org.opencontainers.image.ref.name"]).toBe(TAG);
    const blob = `blobs/sha256/${index.manifests[0]!.digest.replace(/^sha256:/, "")}`;
    const imageManifest = JSON.parse(run("tar", ["-xOf", archive, blob]).stdout) as { config: { digest: string }; layers: unknown[] };
    const id = run("podman", ["image", "inspect", "--format", "{{.Id}}", TAG]).stdout.trim();
    expect(imageManifest.config.digest).toBe(`sha256:${id}`);
    expect(imageManifest.layers.length).toBeGreaterThan(0);
  });

  it("holds the compiled build and production dependencies only: no devDependency, no TypeScript source", () => {
    const mounted = run("podman", ["image", "mount", TAG]);
    expect(mounted.status).toBe(0);
    const mountPoint = mounted.stdout.trim();
    try {
      expectProductionContents(mountPoint);
    } finally {
      run("podman", ["image", "unmount", TAG]);
    }
  });


  it("runs as its numeric user with its working directory and data directory", () => {
    const who = runImage(["--entrypoint", "node", TAG, "-p", 'process.getuid() + ":" + process.getgid() + " " + process.cwd() + " " + process.env.BERTH_DATA_DIR']);
    expect(who).toMatchObject({ status: 0, stdout: "65532:65532 /app /var/lib/berth\n" });
  });

  it.each([
    ["agent", "usage: berth agent --api URL"],
    ["router", "usage: berth router"],
    ["sim-engine", "usage: berth sim-engine"],
    ["serve", "usage: berth serve"],
  ])("runs `berth %s --help` from the compiled build", (command, usage) => {
    const help = runImage([TAG, command, "--help"]);
    expect(help.stderr).toBe("");
    expect(help.status).toBe(0);
    expect(help.stdout.startsWith(usage)).toBe(true);
  });

  it("starts as the agent's manifests and the rendered router pods do, `command: [berth, …]` on PATH", () => {
    const help = runImage(["--entrypoint", "berth", TAG, "agent", "--help"]);
    expect(help).toMatchObject({ status: 0, stderr: "", stdout: expect.stringMatching(/^usage: berth agent --api URL/) });
  });

  it("serves the API (`berth serve`, PGlite in its data directory) until /readyz answers", async () => {
    const port = await freePort();
    const { child, output } = spawnKeepingOutput("bash", [
      join(root, "scripts/run-image.sh"), "--env", "HOST=127.0.0.1", "--env", `PORT=${port}`, "--env", "BERTH_ADMIN_TOKEN=image-test-admin-token-0123", TAG,
    ]);
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    try {
      let ready: { status: number; body: string } | undefined;
      const deadline = Date.now() + 90_000;
      for (let attempt = 0; attempt < 300 && Date.now() < deadline && child.exitCode === null; attempt += 1) {
        try {
          const response = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) });
          ready = { status: response.status, body: await response.text() };
          if (response.status === 200) break;
        } catch {
          // not listening yet
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect(ready, output()).toEqual({ status: 200, body: expect.stringContaining('"ok"') });
      const problem = await fetch(`http://127.0.0.1:${port}/v1/deployments`);
      expect(problem.status).toBe(401);
      expect(output()).toContain('"driver":"pglite"');
    } finally {
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    }
    expect(child.exitCode ?? child.signalCode).not.toBeNull();
    // run-image.sh undid its mounts.
    expect(readFileSync("/proc/self/mounts", "utf8")).not.toContain("berth-run-image.");
  }, 120_000);
});
