// deploy/api end to end on the simulated cluster: the operator's Secret points at an empty
// PostgreSQL database, `kubectl apply -k` (through an overlay, as an operator would) starts the
// migrations Job and two `berth serve` replicas that do not migrate; the Job completes
// (`kubectl wait`), the rollout finishes (`kubectl rollout status`) and the API answers through
// its pods with the migrated schema. The sim runs every pod on this machine, so the test's
// overlay binds each replica to its pod address instead of 0.0.0.0 (two replicas, one port).
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { berthPrograms, type SimCluster, startSimCluster, writeKubeconfig } from "../../k8s/sim/index.ts";
import { API_PORT, DATABASE_SECRET, MIGRATE_JOB } from "../../k8s/manifests/bundles.ts";
import { eventually } from "../agent/e2e-support.ts";
import { BERTH_BIN, runBerth } from "../support/berth-process.ts";
import { withAdmin } from "../support/databases.ts";
import { TEST_SECRET_KEY } from "../support/secret-key.ts";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "../..");
const ADMIN_TOKEN = "deploy-api-admin-token-0123456789";
const IMAGE = "ghcr.io/berth/berth:0.1.0";

const admin = withAdmin;

describe("deploy/api on a simulated cluster", () => {
  let cluster: SimCluster;
  let dir: string;
  let kubeconfig: string;
  let databaseUrl: string;
  const database = `t_${randomBytes(8).toString("hex")}`;
  const savedPath = process.env.PATH;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "berth-deploy-api-"));
    // The image's `berth` on this machine: the simulated kubelet runs a container's command from PATH.
    mkdirSync(join(dir, "bin"));
    writeFileSync(join(dir, "bin/berth"), `#!/bin/sh\nexec "${process.execPath}" "${BERTH_BIN}" "$@"\n`);
    chmodSync(join(dir, "bin/berth"), 0o755);
    process.env.PATH = `${join(dir, "bin")}:${savedPath}`;
    // An empty database: only the migrations Job may create the schema.
    await admin((client) => client.query(`CREATE DATABASE "${database}"`));
    const url = new URL(inject("postgresAdminUrl"));
    url.pathname = `/${database}`;
    databaseUrl = url.toString();
    cluster = await startSimCluster({
      nodes: [{ name: "node-a", gpuType: "nvidia-h100-80gb", gpus: 0 }],
      programs: berthPrograms({ routerImage: IMAGE }),
      timeScale: 0.5,
    });
    kubeconfig = writeKubeconfig(join(dir, "kubeconfig"), cluster.url);
    // The operator's overlay: the bundle as shipped, each replica bound to its pod address.
    const overlay = join(dir, "overlay");
    mkdirSync(overlay);
    writeFileSync(
      join(overlay, "kustomization.yaml"),
      [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources:",
        `  - ${relative(overlay, join(ROOT, "deploy/api"))}`,
        "patches:",
        "  - target: { kind: Deployment, name: berth-api }",
        "    patch: |",
        "      - op: replace",
        "        path: /spec/template/spec/containers/0/env/0",
        "        value: { name: HOST, valueFrom: { fieldRef: { fieldPath: status.podIP } } }",
        "",
      ].join("\n"),
    );
  }, 120_000);

  afterAll(async () => {
    process.env.PATH = savedPath;
    await cluster?.stop({ now: true });
    await admin((client) => client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)).catch(() => {});
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const kubectl = (...args: string[]) => run("kubectl", ["--kubeconfig", kubeconfig, ...args], { cwd: ROOT, timeout: 150_000 });

  it("`berth serve` with BERTH_MIGRATE=false, as the replicas run, never touches an empty schema: it stops instead", async () => {
    const empty = `t_${randomBytes(8).toString("hex")}`;
    await admin((client) => client.query(`CREATE DATABASE "${empty}"`));
    try {
      const url = new URL(inject("postgresAdminUrl"));
      url.pathname = `/${empty}`;
      const result = await runBerth(["serve"], { DATABASE_URL: url.toString(), BERTH_MIGRATE: "false", PORT: "0", BERTH_ADMIN_TOKEN: ADMIN_TOKEN, BERTH_SECRET_KEY: TEST_SECRET_KEY, BERTH_DATA_DIR: join(dir, "unused") }, { timeoutMs: 60_000 });
      expect(result.code, result.stderr).not.toBe(0);
      const schemas = await admin(async () => {
        const client = new pg.Client({ connectionString: url.toString() });
        await client.connect();
        try {
          return (await client.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')")).rows[0].n;
        } finally {
          await client.end();
        }
      });
      expect(schemas).toBe(0);
    } finally {
      await admin((client) => client.query(`DROP DATABASE IF EXISTS "${empty}" WITH (FORCE)`));
    }
  }, 90_000);

  it("migrates once through its Job, then serves from two replicas that never migrate", async () => {
    await kubectl("create", "namespace", "berth-api");
    await kubectl("-n", "berth-api", "create", "secret", "generic", DATABASE_SECRET, `--from-literal=DATABASE_URL=${databaseUrl}`, `--from-literal=BERTH_ADMIN_TOKEN=${ADMIN_TOKEN}`, `--from-literal=BERTH_SECRET_KEY=${TEST_SECRET_KEY}`);
    const applied = await kubectl("apply", "-k", join(dir, "overlay"));
    expect(applied.stdout).toContain(`job.batch/${MIGRATE_JOB} created`);
    expect(applied.stdout).toContain("deployment.apps/berth-api created");

    await kubectl("-n", "berth-api", "wait", "--for=condition=complete", `job/${MIGRATE_JOB}`, "--timeout=120s");
    const { stdout: jobLog } = await kubectl("-n", "berth-api", "logs", `job/${MIGRATE_JOB}`);
    expect(jobLog).toContain("berth: migrations applied (postgres)");
    const { stdout: succeeded } = await kubectl("-n", "berth-api", "get", "job", MIGRATE_JOB, "-o", "jsonpath={.status.succeeded}");
    expect(succeeded).toBe("1");

    try {
      await kubectl("-n", "berth-api", "rollout", "status", "deployment/berth-api", "--timeout=60s");
    } catch (error) {
      const pods = await kubectl("-n", "berth-api", "get", "pods", "-o", "wide").catch((e) => e);
      const logs = await kubectl("-n", "berth-api", "logs", "-l", "app.kubernetes.io/name=berth-api", "--tail=20").catch((e) => e);
      const events = await kubectl("-n", "berth-api", "get", "events").catch((e) => e);
      throw new Error(`${(error as Error).message}\npods:\n${pods.stdout}\nlogs:\n${logs.stdout}${logs.stderr ?? ""}\nevents:\n${events.stdout}`);
    }
    const { stdout: ips } = await kubectl("-n", "berth-api", "get", "pods", "-l", "app.kubernetes.io/name=berth-api", "-o", "jsonpath={.items[*].status.podIP}");
    const addresses = ips.trim().split(" ");
    expect(addresses).toHaveLength(2);
    for (const ip of addresses) {
      const ready = await eventually(`${ip} ready`, async () => (await fetch(`http://${ip}:${API_PORT}/readyz`)).ok);
      expect(ready).toBe(true);
      // The schema is there: an authenticated read of a table the migrations created.
      const clusters = await fetch(`http://${ip}:${API_PORT}/v1/clusters`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(clusters.status, await clusters.clone().text()).toBe(200);
      expect((await clusters.json()).items).toEqual([]);
    }
    // Each migration applied once (one row per migration file).
    const applications = await admin(async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        return (await client.query("SELECT count(*)::int AS n, count(DISTINCT hash)::int AS distinct_hashes FROM drizzle.__drizzle_migrations")).rows[0];
      } finally {
        await client.end();
      }
    });
    expect(applications.n).toBeGreaterThan(0);
    expect(applications.n).toBe(applications.distinct_hashes);
  }, 200_000);
});
