// Control plane start-up: `npm run bench:control-plane`. Starts the real control plane of the
// tests (etcd, kube-apiserver, kube-controller-manager, kube-scheduler in a network namespace,
// until the default ServiceAccount exists) and the simulated cluster, BENCH_RUNS times each in
// turn, and reports the median start time of each and their ratio. Also times the build script
// with the binaries cached (the cold build is measured by hand: see bench/README.md). Needs root.
// Writes bench/results/control-plane.json with the commit and the machine's load.
import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { berthPrograms, startSimCluster } from "../k8s/sim/index.ts";
import { controlPlaneBinaries, startRealCluster } from "../test/support/real-cluster/control-plane.ts";
import { printTable } from "./support/table.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const RESULTS = new URL("./results/control-plane.json", import.meta.url);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const cachedBuildStarted = performance.now();
await controlPlaneBinaries();
const cachedBuildMs = performance.now() - cachedBuildStarted;

const real: number[] = [];
const sim: number[] = [];
const load = [loadavg()[0]!];
for (let i = 0; i < RUNS; i++) {
  const cluster = await startRealCluster();
  real.push(cluster.startMs);
  await cluster.stop();
  const started = performance.now();
  const simulated = await startSimCluster({ nodes: [{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpus: 8 }], programs: berthPrograms({ routerImage: "ghcr.io/berth/berth:0.1.0" }) });
  sim.push(performance.now() - started);
  await simulated.stop({ now: true });
  load.push(loadavg()[0]!);
}

const result = {
  commit: execFileSync("git", ["rev-parse", "--short", "HEAD"]).toString().trim(),
  date: new Date().toISOString(),
  cpus: cpus().length,
  loadAverage1m: { before: load[0], max: Math.max(...load) },
  runs: RUNS,
  realStartMs: { median: Math.round(median(real)), all: real.map(Math.round) },
  simStartMs: { median: Math.round(median(sim)), all: sim.map(Math.round) },
  realOverSim: Number((median(real) / median(sim)).toFixed(1)),
  cachedBuildScriptMs: Math.round(cachedBuildMs),
};
printTable([
  ["cluster", "median start (ms)", "runs (ms)"],
  ["real control plane", String(result.realStartMs.median), result.realStartMs.all.join(" ")],
  ["simulated", String(result.simStartMs.median), result.simStartMs.all.join(" ")],
]);
console.log(`\nreal / simulated: ${result.realOverSim}×; build script with cached binaries: ${result.cachedBuildScriptMs} ms; load ${load.map((l) => l.toFixed(2)).join(" → ")}`);
await mkdir(new URL("./results/", import.meta.url), { recursive: true });
await writeFile(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
