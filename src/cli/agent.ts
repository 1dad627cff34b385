// `berth agent --api URL --token ba_… [--kubeconfig FILE]`: the composition root of the agent.
// Configuration is parsed here once; SIGINT/SIGTERM stop the loops and leave every workload as it is.
import { KubeConfig } from "@kubernetes/client-node";
import { createAgent } from "../agent/agent.ts";
import { createApiClient } from "../agent/api-client.ts";
import { allowPlainHttp, createKube } from "../agent/kube.ts";
import { systemClock } from "../domain/clock.ts";
import { DEFAULT_EC_CACHE_SIZE, isIpv4Cidr } from "../../k8s/render/index.ts";
import { DEFAULT_NAMESPACE } from "../../k8s/manifests/agent-install.ts";
import { parseCommandArgs, UsageError } from "./args.ts";

const USAGE = `usage: berth agent --api URL --token ba_… [--kubeconfig FILE] [--router-image IMAGE]
                   [--ec-cache-storage-class NAME] [--ec-cache-size QUANTITY]
                   [--ingress-namespace NAME] [--model-egress-cidr CIDR]
       berth agent install --print --api URL [--token ba_…]   (berth agent install --help)

Runs the cluster agent: it long-polls the API for its cluster's deployments and reconciles
them into Kubernetes. --api and --token may come from BERTH_API_URL and BERTH_AGENT_TOKEN;
the cluster from --kubeconfig, else KUBECONFIG or ~/.kube/config, else in-cluster.
vLLM EPD deployments share encoder outputs through a ReadWriteMany claim <deployment>-ec-cache:
--ec-cache-storage-class picks its class (default: the cluster's default class), --ec-cache-size
its size (default ${DEFAULT_EC_CACHE_SIZE}).
Every project namespace denies traffic but DNS and each deployment's own paths (NetworkPolicies):
--ingress-namespace names the namespace allowed to reach routers (the gateway's; default: any),
--model-egress-cidr the IPv4 block engines download weights from over TCP 443 (default 0.0.0.0/0,
minus link-local, RFC 1918 and 100.64.0.0/10 ranges unless the block itself lies inside one).
The agent's own namespace (POD_NAMESPACE, else ${DEFAULT_NAMESPACE}) reaches engines and routers.`;

/** A namespace name (DNS-1123 label). */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A Kubernetes quantity as a claim's storage request takes it (10Gi, 500M, 1.5T). */
const QUANTITY = /^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/;

export async function run(args: string[]): Promise<number> {
  // `berth agent install …` prints manifests and exits: it needs no API or cluster connection.
  if (args[0] === "install") {
    const { processIo, runAgentInstall } = await import("./agent-install.ts");
    return runAgentInstall(args.slice(1), processIo);
  }
  const { values } = parseCommandArgs(args, {
    name: "berth agent",
    usage: USAGE,
    options: {
      api: { type: "string" },
      token: { type: "string" },
      kubeconfig: { type: "string" },
      "router-image": { type: "string" },
      "ec-cache-storage-class": { type: "string" },
      "ec-cache-size": { type: "string" },
      "ingress-namespace": { type: "string" },
      "model-egress-cidr": { type: "string" },
    },
  });
  const ingressNamespace = values["ingress-namespace"];
  if (ingressNamespace !== undefined && !NAMESPACE.test(ingressNamespace)) {
    throw new UsageError(`--ingress-namespace must be a namespace name (a DNS-1123 label such as ingress-nginx), got "${ingressNamespace}"`, USAGE);
  }
  const modelEgressCidr = values["model-egress-cidr"];
  if (modelEgressCidr !== undefined && !isIpv4Cidr(modelEgressCidr)) {
    throw new UsageError(`--model-egress-cidr must be an IPv4 CIDR such as 0.0.0.0/0 or 10.20.0.0/16 (got "${modelEgressCidr}")`, USAGE);
  }
  const agentNamespace = process.env.POD_NAMESPACE || DEFAULT_NAMESPACE;
  const size = values["ec-cache-size"];
  if (size !== undefined && !QUANTITY.test(size)) {
    throw new UsageError(`--ec-cache-size must be a Kubernetes quantity such as 10Gi or 500Mi (got "${size}")`, USAGE);
  }
  const storageClassName = values["ec-cache-storage-class"];
  const api = values.api ?? process.env.BERTH_API_URL;
  const token = values.token ?? process.env.BERTH_AGENT_TOKEN;
  if (!api || !token) throw new UsageError("--api URL and --token are required", USAGE);
  if (!/^https?:\/\//.test(api)) throw new UsageError(`--api must be an http:// or https:// URL (got "${api}")`, USAGE);
  const kc = new KubeConfig();
  if (values.kubeconfig) kc.loadFromFile(values.kubeconfig);
  else kc.loadFromDefault();
  allowPlainHttp(kc);
  const agent = createAgent({
    kube: createKube(kc),
    api: createApiClient({ baseUrl: api, token }),
    clock: systemClock,
    config: {
      ...(values["router-image"] && { routerImage: values["router-image"] }),
      ...((storageClassName !== undefined || size !== undefined) && {
        ecCache: { ...(storageClassName !== undefined && { storageClassName }), ...(size !== undefined && { size }) },
      }),
      isolation: { agentNamespace, ...(ingressNamespace && { ingressNamespace }), ...(modelEgressCidr && { modelEgressCidr }) },
    },
  });
  agent.start();
  process.stderr.write(JSON.stringify({ level: "info", msg: "berth agent started", api, server: kc.getCurrentCluster()?.server }) + "\n");
  await new Promise<void>((resolve) => {
    const stop = () => void agent.stop().then(resolve);
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  process.exit(0);
}
