// The agent's token confined by a real kube-apiserver's RBAC and ValidatingAdmissionPolicy
// (the real CEL engine): the scenarios of test/parity/agent-confinement.ts, which the simulated
// cluster also passes (test/k8s/sim/authorization.test.ts).
import { describe } from "vitest";
import { describeAgentConfinement } from "../parity/agent-confinement.ts";
import { kubeConfigFile, kubectlOn, startRealCluster } from "./support.ts";

describe("the agent's token on a real kube-apiserver", () => {
  describeAgentConfinement("registry.invalid/idle:1", async () => {
    const cluster = await startRealCluster();
    return {
      kubectl: kubectlOn(cluster),
      tokenKubeconfig: (name, token) => cluster.tokenKubeconfigs(name, token).outside,
      tokenKubeConfig: (token) => kubeConfigFile(cluster.tokenKubeconfigs(`token-${token.slice(-8)}`, token).outside),
      adminKubeConfig: kubeConfigFile(cluster.admin.outside),
      // Bound ServiceAccount tokens are JWTs signed with the cluster's key.
      tokenPattern: /^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/,
      stop: () => cluster.stop(),
    };
  });
});
