// `berth agent --api URL --token ba_… [--kubeconfig FILE]`: the composition root of the agent.
// Configuration is parsed here once; SIGINT/SIGTERM stop the loops and leave every workload as it is.
import { KubeConfig } from "@kubernetes/client-node";
import { createAgent } from "../agent/agent.ts";
import { createApiClient } from "../agent/api-client.ts";
import { allowPlainHttp, createKube } from "../agent/kube.ts";
import { systemClock } from "../domain/clock.ts";
import { parseCommandArgs, UsageError } from "./args.ts";

const USAGE = `usage: berth agent --api URL --token ba_… [--kubeconfig FILE] [--router-image IMAGE]
       berth agent install --print --api URL [--token ba_…]   (berth agent install --help)

Runs the cluster agent: it long-polls the API for its cluster's deployments and reconciles
them into Kubernetes. --api and --token may come from BERTH_API_URL and BERTH_AGENT_TOKEN;
the cluster from --kubeconfig, else KUBECONFIG or ~/.kube/config, else in-cluster.`;

export async function run(args: string[]): Promise<number> {
  // `berth agent install …` prints manifests and exits: it needs no API or cluster connection.
  if (args[0] === "install") {
    const { processIo, runAgentInstall } = await import("./agent-install.ts");
    return runAgentInstall(args.slice(1), processIo);
  }
  const { values } = parseCommandArgs(args, {
    name: "berth agent",
    usage: USAGE,
    options: { api: { type: "string" }, token: { type: "string" }, kubeconfig: { type: "string" }, "router-image": { type: "string" } },
  });
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
    config: values["router-image"] ? { routerImage: values["router-image"] } : {},
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
