// The official Kubernetes Python client (Debian's python3-kubernetes, for /usr/bin/python3)
// against the simulated cluster: lists, a watch that sees a pod created while it runs
// (ADDED, then MODIFIED up to Ready; the client sends watch=True), and server-side apply over
// a field another manager owns: 409 without force, taken over with force=True. CI installs the
// package (.ci/run); without it this test fails.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { berthPrograms } from "../../../k8s/sim/index.ts";
import { ROUTER_IMAGE, startTestCluster, type TestCluster } from "./support.ts";

const PYTHON = "/usr/bin/python3";
const SCRIPT = join(import.meta.dirname, "python", "official_client.py");
const IDLE_IMAGE = "test.local/idle:1";

let t: TestCluster;
beforeAll(async () => {
  t = await startTestCluster({ programs: { ...berthPrograms({ routerImage: ROUTER_IMAGE }), noProcessImages: [IDLE_IMAGE] } });
});
afterAll(async () => {
  await t?.stop();
});

function python(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(PYTHON, args, { encoding: "utf8", timeout: 90_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr: stderr || (error?.message ?? "") });
    });
  });
}

it("the kubernetes module is importable by /usr/bin/python3 (apt-get install python3-kubernetes)", async () => {
  const run = await python("-c", "import kubernetes; print(kubernetes.__version__)");
  expect(run.stderr, "python3-kubernetes is missing: apt-get install -y python3-kubernetes").toBe("");
  expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
});

it("lists, watches a pod from ADDED to Ready, and server-side applies with and without force", async () => {
  const run = await python(SCRIPT, t.cluster.kubeconfigPath!, "python-client", IDLE_IMAGE);
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  const out = JSON.parse(run.stdout) as {
    namespaces: string[];
    pods_before: string[];
    pods_after: string[];
    watch_events: { type: string; name: string; phase: string | null }[];
    apply_without_force: { status: number; reason?: string };
    apply_with_force: { value: string; managers: string[] };
  };
  expect(out.namespaces).toEqual(expect.arrayContaining(["default", "python-client"]));
  expect(out.pods_before).toEqual([]);
  expect(out.pods_after).toEqual(["watched"]);
  expect(out.watch_events[0]).toEqual({ type: "ADDED", name: "watched", phase: "Pending" });
  expect(out.watch_events.slice(1).length).toBeGreaterThan(0);
  for (const event of out.watch_events.slice(1)) expect(event).toMatchObject({ type: "MODIFIED", name: "watched" });
  expect(out.watch_events.at(-1)?.phase).toBe("Running");
  expect(out.apply_without_force).toEqual({ status: 409, reason: "Conflict" });
  expect(out.apply_with_force).toEqual({ value: "b", managers: ["other"] });
});
