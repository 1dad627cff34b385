// `berth agent --api URL --token ba_… [--kubeconfig FILE]`: the composition root of the agent.
// Configuration is parsed here once; SIGINT/SIGTERM stop the loops and leave every workload as it is.
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { createAgent } from "../agent/agent.ts";
import { createApiClient } from "../agent/api-client.ts";
import { allowPlainHttp, createKube } from "../agent/kube.ts";
import { systemClock } from "../domain/clock.ts";

const USAGE = "usage: berth agent --api URL --token ba_… [--kubeconfig FILE] [--router-image IMAGE]";

export async function run(args: string[]): Promise<void> {
  // `berth agent install …` prints manifests and exits: it needs no API or cluster connection.
  if (args[0] === "install") {
    const { processIo, runAgentInstall } = await import("./agent-install.ts");
    process.exit(await runAgentInstall(args.slice(1), processIo));
  }
  const { values } = parseArgs({
    args,
    options: {
      api: { type: "string" },
      token: { type: "string" },
      kubeconfig: { type: "string" },
      "router-image": { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const api = values.api ?? process.env.BERTH_API_URL;
  const token = values.token ?? process.env.BERTH_AGENT_TOKEN;
  if (!api || !token || !/^https?:\/\//.test(api)) {
    process.stderr.write(`berth agent: --api URL and --token are required\n${USAGE}\n`);
    process.exit(2);
  }
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
}
