// `berth node`: joins one virtual GPU machine to a Kubernetes cluster and runs the pods its
// scheduler places there as processes (k8s/node). Its kubeconfig should carry the node's own
// identity (user system:node:<name>, group system:nodes) so the Node authorizer and
// NodeRestriction hold it to what a kubelet may do.
import { KubeConfig } from "@kubernetes/client-node";
import { berthPrograms } from "../../k8s/sim/cluster.ts";
import { startNode } from "../../k8s/node/node.ts";
import { GPU_TYPES, isGpuType } from "../domain/gpu-profiles.ts";
import { parseCommandArgs, UsageError } from "./args.ts";

const USAGE = `usage: berth node --name NAME --address IP --pod-addresses FIRST-LAST
                  [--gpu-type ${GPU_TYPES[0]}] [--gpus 8] [--kubeconfig FILE]
                  [--router-image IMAGE] [--time-scale 1] [--sim-engine-flag FLAG]…

Registers the Node NAME (GPU capacity and NVIDIA GPU Feature Discovery labels), keeps its Lease,
and runs the pods bound to it as processes on this machine, each bound to its own address from
--pod-addresses (e.g. 10.244.1.2-10.244.1.254: those addresses must be local, as in a network
namespace routing the pod range to lo). Engine images run berth's engine simulator, the router
image runs berth's router; each --sim-engine-flag is passed to the simulator (e.g. --sim-engine-flag=--latency-profile
--sim-engine-flag=turbo). The cluster from --kubeconfig, else KUBECONFIG or ~/.kube/config.
SIGTERM stops every pod as a delete does (preStop, grace), without removing the pod objects.`;

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

export async function run(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(args, {
    name: "berth node",
    usage: USAGE,
    options: {
      name: { type: "string" },
      address: { type: "string" },
      "pod-addresses": { type: "string" },
      "gpu-type": { type: "string" },
      gpus: { type: "string" },
      kubeconfig: { type: "string" },
      "router-image": { type: "string" },
      "time-scale": { type: "string" },
      "sim-engine-flag": { type: "string", multiple: true },
    },
  });
  if (!values.name) throw new UsageError("--name is required", USAGE);
  if (!values.address || !IPV4.test(values.address)) throw new UsageError("--address must be an IPv4 address", USAGE);
  const [first, last] = (values["pod-addresses"] ?? "").split("-");
  if (!first || !last || !IPV4.test(first) || !IPV4.test(last)) throw new UsageError("--pod-addresses must be FIRST-LAST, two IPv4 addresses", USAGE);
  const gpuType = values["gpu-type"] ?? GPU_TYPES[0];
  if (!isGpuType(gpuType)) throw new UsageError(`--gpu-type must be one of ${GPU_TYPES.join(", ")}`, USAGE);
  const gpus = Number(values.gpus ?? "8");
  if (!Number.isInteger(gpus) || gpus < 0 || gpus > 64) throw new UsageError("--gpus must be a whole number from 0 to 64", USAGE);
  const timeScale = Number(values["time-scale"] ?? "1");
  if (!(timeScale > 0 && timeScale <= 1)) throw new UsageError("--time-scale must be a number in (0, 1]", USAGE);

  const kubeConfig = new KubeConfig();
  if (values.kubeconfig) kubeConfig.loadFromFile(values.kubeconfig);
  else kubeConfig.loadFromDefault();
  const log = (line: string) => process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), node: values.name, msg: line })}\n`);
  const node = await startNode({
    kubeConfig,
    node: { name: values.name, gpuType, gpus, address: values.address },
    podAddresses: { first, last },
    programs: berthPrograms({ routerImage: values["router-image"] ?? "ghcr.io/berth/berth:0.1.0", simEngineFlags: values["sim-engine-flag"] ?? [], berthCommands: true }),
    timeScale,
    log,
  });
  log("berth node started");
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  await node.stop();
  return 0;
}
