// The agent's token confined on the simulated cluster: the scenarios of
// test/parity/agent-confinement.ts (the same ones test/real-cluster/confinement.test.ts runs
// against a real kube-apiserver), over HTTPS with an admin token, since kubectl sends bearer
// tokens only over TLS.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { describe } from "vitest";
import { kubeConfigOptions, writeKubeconfig } from "../../../k8s/sim/kubeconfig.ts";
import { berthPrograms } from "../../../k8s/sim/index.ts";
import { describeAgentConfinement, type KubectlRun } from "../../parity/agent-confinement.ts";
import { ROUTER_IMAGE, startTestCluster } from "./support.ts";

const IDLE_IMAGE = "test.local/idle:1";

describe("the agent's token on the simulated cluster", () => {
  describeAgentConfinement(IDLE_IMAGE, async () => {
    const certDir = mkdtempSync(join(tmpdir(), "berth-sim-tls-"));
    const [key, cert] = [join(certDir, "key.pem"), join(certDir, "cert.pem")];
    await promisify(execFile)("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
      "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert,
    ]);
    const t = await startTestCluster({
      tls: { key: readFileSync(key), cert: readFileSync(cert) },
      // Over HTTPS kubectl asks for a password when its user has no credentials: the admin has a token.
      token: true,
      programs: { ...berthPrograms({ routerImage: ROUTER_IMAGE }), noProcessImages: [IDLE_IMAGE] },
    });
    const kubectl = (args: readonly string[], options: { kubeconfig?: string; input?: string } = {}) =>
      new Promise<KubectlRun>((resolve, reject) => {
        const child = execFile(
          "kubectl",
          ["--kubeconfig", options.kubeconfig ?? t.cluster.kubeconfigPath!, "--cache-dir", join(t.dir, "kube-cache"), ...args],
          { encoding: "utf8", timeout: 60_000 },
          (error, stdout, stderr) => {
            if (error && typeof error.code !== "number") return reject(error);
            resolve({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr });
          },
        );
        child.stdin?.end(options.input ?? "");
      });
    const tokenKubeConfig = (token: string) => {
      const kc = new k8s.KubeConfig();
      kc.loadFromOptions(kubeConfigOptions(t.cluster.url, { token }));
      return kc;
    };
    return {
      kubectl,
      tokenKubeconfig: (name, token) => writeKubeconfig(join(t.dir, `${name}-kubeconfig`), t.cluster.url, { token }),
      tokenKubeConfig,
      adminKubeConfig: t.kc,
      // TokenRequest tokens of the simulated cluster are opaque, not JWTs.
      tokenPattern: /^berth-sim\.[A-Za-z0-9_-]{43}$/,
      stop: () => t.stop(),
    };
  });
});
