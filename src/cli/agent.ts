// `berth agent --api URL --token ba_… [--kubeconfig FILE]`: the composition root of the agent.
// Configuration is parsed here once; SIGINT/SIGTERM stop the loops and leave every workload as it is.
// With --leader-elect the loops run only while this process holds the Lease (docs/design.md §13.6).
import { hostname } from "node:os";
import { KubeConfig } from "@kubernetes/client-node";
import { type Agent, createAgent } from "../agent/agent.ts";
import { createApiClient } from "../agent/api-client.ts";
import { allowPlainHttp, createKube, type Kube } from "../agent/kube.ts";
import { DEFAULT_ELECTION_TIMINGS, type ElectionTimings, parseDuration, timingProblem } from "../agent/leader-election.ts";
import { startLeaderElection } from "../agent/leader-election-runner.ts";
import { parseAgentMode } from "../agent/namespace-scope.ts";
import { systemClock } from "../domain/clock.ts";
import { DEFAULT_EC_CACHE_SIZE, isIpv4Cidr } from "../../k8s/render/index.ts";
import { DEFAULT_NAMESPACE } from "../../k8s/manifests/agent-install.ts";
import { parseCommandArgs, UsageError } from "./args.ts";

const LEASE_NAME = "berth-agent";
const DEFAULT_LEASE_NAMESPACE = DEFAULT_NAMESPACE;

const USAGE = `usage: berth agent --api URL --token ba_… [--kubeconfig FILE] [--router-image IMAGE]
                   [--ec-cache-storage-class NAME] [--ec-cache-size QUANTITY]
                   [--namespaces berth-a,berth-b]
                   [--leader-elect [--leader-elect-namespace NS] [--leader-elect-lease-duration 15s]
                    [--leader-elect-renew-deadline 10s] [--leader-elect-retry-period 2s]]
                   [--ingress-namespace NAME] [--model-egress-cidr CIDR]
       berth agent install --print --api URL [--token ba_…]   (berth agent install --help)
       berth agent rotate-credential --api URL --token ba_…   (berth agent rotate-credential --help)

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
The agent's own namespace (POD_NAMESPACE, else ${DEFAULT_NAMESPACE}) reaches engines and routers.
--namespaces (or BERTH_AGENT_NAMESPACES) runs it in namespaced mode: it watches and writes only in
those existing namespaces, never creates one, and counts free GPUs from the pods it sees there;
without it, cluster mode (docs/install.md).
--leader-elect runs the loops only while this process holds the Lease ${LEASE_NAME} in
--leader-elect-namespace (default: POD_NAMESPACE, else ${DEFAULT_LEASE_NAMESPACE}), as identity POD_NAME (else
hostname_pid); a standby touches nothing but the Lease. Durations as Go writes them (15s, 500ms).`;

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
  if (args[0] === "rotate-credential") {
    const { runAgentRotate } = await import("./agent-rotate.ts");
    return runAgentRotate(args.slice(1));
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
      "leader-elect": { type: "boolean" },
      "leader-elect-namespace": { type: "string" },
      "leader-elect-lease-duration": { type: "string" },
      "leader-elect-renew-deadline": { type: "string" },
      "leader-elect-retry-period": { type: "string" },
      namespaces: { type: "string" },
      "ingress-namespace": { type: "string" },
      "model-egress-cidr": { type: "string" },
    },
  });
  const timings = electionTimings(values);
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
  let mode;
  try {
    mode = parseAgentMode(values.namespaces ?? process.env.BERTH_AGENT_NAMESPACES);
  } catch (error) {
    throw new UsageError(`--namespaces: ${(error as Error).message}`, USAGE);
  }
  const kc = new KubeConfig();
  if (values.kubeconfig) kc.loadFromFile(values.kubeconfig);
  else kc.loadFromDefault();
  allowPlainHttp(kc);
  const kube = createKube(kc);
  const makeAgent = () =>
    createAgent({
      kube,
      api: createApiClient({ baseUrl: api, token }),
      clock: systemClock,
      config: {
        ...(values["router-image"] && { routerImage: values["router-image"] }),
        ...(mode.mode === "namespaced" && { namespaces: mode.namespaces }),
        ...((storageClassName !== undefined || size !== undefined) && {
          ecCache: { ...(storageClassName !== undefined && { storageClassName }), ...(size !== undefined && { size }) },
        }),
        isolation: { agentNamespace, ...(ingressNamespace && { ingressNamespace }), ...(modelEgressCidr && { modelEgressCidr }) },
      },
    });
  const server = kc.getCurrentCluster()?.server;
  if (!values["leader-elect"]) {
    const agent = makeAgent();
    agent.start();
    log("info", "berth agent started", { ...mode, api, server });
    await untilSignal();
    await agent.stop();
    process.exit(0);
  }
  const namespace = values["leader-elect-namespace"] ?? process.env.POD_NAMESPACE ?? DEFAULT_LEASE_NAMESPACE;
  return runElected({ kube, makeAgent, namespace, timings, identity: process.env.POD_NAME || `${hostname()}_${process.pid}`, api, server, mode });
}

const log = (level: "info" | "warn", msg: string, data?: object) => process.stderr.write(JSON.stringify({ level, msg, ...data }) + "\n");
const logger = { info: (msg: string, data?: object) => log("info", msg, data), warn: (msg: string, data?: object) => log("warn", msg, data) };

const untilSignal = () =>
  new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });

function electionTimings(values: Record<string, unknown>): ElectionTimings {
  const flag = (name: string, fallback: number) => {
    const text = values[name];
    if (text === undefined) return fallback;
    const ms = parseDuration(String(text));
    if (ms === undefined) throw new UsageError(`--${name} must be a positive duration such as 15s or 500ms (got "${String(text)}")`, USAGE);
    return ms;
  };
  const timings = {
    leaseDurationMs: flag("leader-elect-lease-duration", DEFAULT_ELECTION_TIMINGS.leaseDurationMs),
    renewDeadlineMs: flag("leader-elect-renew-deadline", DEFAULT_ELECTION_TIMINGS.renewDeadlineMs),
    retryPeriodMs: flag("leader-elect-retry-period", DEFAULT_ELECTION_TIMINGS.retryPeriodMs),
  };
  const problem = timingProblem(timings);
  if (problem) throw new UsageError(`--leader-elect-*: ${problem}`, USAGE);
  return timings;
}

/**
 * A cold standby: until it holds the Lease the process runs no informer, long-poll, write or
 * report. Leading starts the agent as a fresh start would (it resumes recorded operations from
 * the API). Losing the Lease exits 1 at once, without waiting for in-flight work (client-go's
 * usual OnStoppedLeading): the Deployment restarts it as a standby. SIGTERM stops the loops
 * first and only then releases the Lease, so the standby never acts beside a leader still writing.
 */
async function runElected(options: {
  kube: Kube;
  makeAgent: () => Agent;
  namespace: string;
  timings: ElectionTimings;
  identity: string;
  api: string;
  server: string | undefined;
  mode: ReturnType<typeof parseAgentMode>;
}): Promise<number> {
  const { kube, makeAgent, namespace, timings, identity } = options;
  let agent: Agent | undefined;
  let stopping = false;
  log("info", "berth agent started, electing a leader", { ...options.mode, api: options.api, server: options.server, lease: `${namespace}/${LEASE_NAME}`, identity });
  const elector = startLeaderElection({
    coordination: kube.coordination,
    namespace,
    name: LEASE_NAME,
    identity,
    timings,
    logger,
    onStartedLeading() {
      if (stopping) return;
      agent = makeAgent();
      agent.start();
    },
    onStoppedLeading() {
      process.exit(1);
    },
  });
  await untilSignal();
  stopping = true;
  await agent?.stop();
  await elector.stop({ release: true });
  process.exit(0);
}
