// Shared helpers for the simulated-cluster tests: a cluster per test file, client-node clients
// pointed at it, rendered deployments, polling with a deadline, and kubectl.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { admitDeploymentSpec } from "../../../src/domain/admission.ts";
import { applySpecDefaults } from "../../../src/domain/deployment-spec.ts";
import { renderDeployment, type RenderInput } from "../../../k8s/render/index.ts";
import { berthPrograms, startSimCluster, type SimCluster, type SimClusterOptions } from "../../../k8s/sim/index.ts";
import type { DeploymentBody } from "../../fixtures/deployment-builder.ts";

export const ROUTER_IMAGE = "ghcr.io/berth/berth:0.1.0";
export const GPU_NODES = [
  { name: "gpu-a", gpuType: "nvidia-h100-80gb", gpus: 8 },
  { name: "gpu-b", gpuType: "nvidia-h100-80gb", gpus: 8 },
];

export interface TestCluster {
  cluster: SimCluster;
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  apps: k8s.AppsV1Api;
  objects: k8s.KubernetesObjectApi;
  dir: string;
  stop(): Promise<void>;
}

/** A simulated cluster with two 8-GPU H100 nodes, probes and backoffs 10× faster, engines in turbo latency. */
export async function startTestCluster(options: Partial<SimClusterOptions> = {}): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), "berth-sim-test-"));
  const cluster = await startSimCluster({
    nodes: GPU_NODES,
    programs: berthPrograms({ routerImage: ROUTER_IMAGE, simEngineFlags: ["--latency-profile", "turbo"] }),
    timeScale: 0.1,
    kubeconfigPath: join(dir, "kubeconfig"),
    ...options,
  });
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions(cluster.kubeConfigOptions);
  return {
    cluster,
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    objects: k8s.KubernetesObjectApi.makeApiClient(kc),
    dir,
    stop: async () => {
      await cluster.stop({ now: true });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const DEPLOYMENT_ID = "dep_0123456789abcdefghjk";

export function renderInput(body: DeploymentBody, projectName = "default"): RenderInput {
  const spec = applySpecDefaults(body.spec);
  const problems = admitDeploymentSpec(body.name, spec, {});
  if (problems.length > 0) throw new Error(`fixture ${body.name} is not admissible: ${JSON.stringify(problems)}`);
  return { deployment: { id: DEPLOYMENT_ID, name: body.name, projectName, spec, generation: 1 }, options: { routerImage: ROUTER_IMAGE } };
}

export function render(body: DeploymentBody, projectName = "default") {
  return renderDeployment(renderInput(body, projectName));
}

/** Server-side apply as the agent will do it (field manager berth-agent, force). */
export async function apply(t: TestCluster, objects: readonly object[]): Promise<k8s.KubernetesObject[]> {
  const out: k8s.KubernetesObject[] = [];
  for (const object of objects) {
    out.push(await t.objects.patch(object as k8s.KubernetesObject, undefined, undefined, "berth-agent", true, k8s.PatchStrategy.ServerSideApply));
  }
  return out;
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as T;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String((last as Error).message ?? last)})` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export const isReady = (pod: k8s.V1Pod) => pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

export async function kubectl(t: TestCluster, ...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)("kubectl", ["--kubeconfig", t.cluster.kubeconfigPath!, "--cache-dir", join(t.dir, "kube-cache"), ...args], {
    encoding: "utf8",
    timeout: 20_000,
  });
  return stdout;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
