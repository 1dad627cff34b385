// Shared by the real-cluster tests: a real control plane per test file (test/support/real-cluster),
// kubectl that reports its exit instead of throwing, and client-node pointed at the cluster.
import { execFile } from "node:child_process";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { type RealCluster, startRealCluster } from "../support/real-cluster/control-plane.ts";

export { type RealCluster, startRealCluster };

/** How long a test file may wait for the control plane: a machine without the cached binaries builds them first. */
export const CONTROL_PLANE_SETUP_MS = 30 * 60_000;

export interface KubectlRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** kubectl as the admin unless another kubeconfig is given, with a cache of its own; never throws on a non-zero exit. */
export function kubectlOn(cluster: RealCluster) {
  return (args: readonly string[], options: { kubeconfig?: string; input?: string; cwd?: string } = {}) =>
    new Promise<KubectlRun>((resolve, reject) => {
      const child = execFile(
        "kubectl",
        ["--kubeconfig", options.kubeconfig ?? cluster.admin.outside, "--cache-dir", join(cluster.dir, "kube-cache"), ...args],
        { encoding: "utf8", timeout: 60_000, maxBuffer: 32 * 1024 * 1024, cwd: options.cwd },
        (error, stdout, stderr) => {
          if (error && typeof error.code !== "number") return reject(error);
          resolve({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr });
        },
      );
      child.stdin?.end(options.input ?? "");
    });
}

export function kubeConfigFile(path: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return kc;
}
