// The simulated cluster's composition root: one store and registry, the HTTP API server, the
// scheduling loop, the process kubelet for every node, the endpoints controller and service
// proxy, the Deployment, Job and namespace controllers. `stop({ now: true })` kills every pod
// process at once (no preStop, no grace) and closes everything, well within 3 s.
import { mkdtempSync, rmSync } from "node:fs";
import { release, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { GPU_TYPE_LABEL } from "../render/names.ts";
import { type ObservedRequest, startApiServer } from "./api-server.ts";
import type { StaticUser } from "./authn.ts";
import { DeploymentController } from "./deployment-controller.ts";
import { EndpointsController } from "./endpoints-controller.ts";
import { JobController } from "./job-controller.ts";
import { VolumeController } from "./volumes.ts";
import { EventRecorder, startEventExpiry } from "./events.ts";
import { AddressPool, type AddressMemory } from "./ip-pool.ts";
import { Kubelet } from "./kubelet.ts";
import { simKubeletCluster } from "./kubelet-cluster.ts";
import { kubeConfigOptions, writeKubeconfig } from "./kubeconfig.ts";
import { NamespaceController } from "./namespace-controller.ts";
import type { KubeObject } from "./objects.ts";
import { reapOrphans } from "./orphans.ts";
import type { Programs } from "./program.ts";
import { Registry } from "./registry.ts";
import { resourceOf } from "./resources.ts";
import type { Taint } from "./scheduler.ts";
import { SchedulingLoop } from "./scheduling.ts";
import { ServiceProxy } from "./service-proxy.ts";
import { Store } from "./store.ts";

export interface SimNode {
  name: string;
  /** A berth GPU id (`nvidia-h100-80gb`…): the node's `berth.dev/gpu-type` label and the simulator's `--gpu-type`. */
  gpuType: string;
  gpus: number;
  cpu?: string;
  memory?: string;
  labels?: Record<string, string>;
  taints?: Taint[];
}

export interface AddressRange {
  first: string;
  last: string;
}

export interface SimClusterOptions {
  nodes: SimNode[];
  programs: Programs;
  host?: string;
  /** API server port; 0 (default) picks a free one. */
  port?: number;
  /** When `port` is taken, listen on a free one instead of failing (`SimCluster.portTaken` then says so). */
  portFallback?: boolean;
  /**
   * Pod and Service addresses from an earlier run (keyed "pods/<ns>/<name>", "services/<ns>/<name>"),
   * given back to the same objects; onChange hears every change of the assignments (not the releases of stop()).
   */
  addressMemory?: AddressMemory;
  /**
   * Bearer token the API server requires: a string is used as given, true makes a random one,
   * false or absent (the default) leaves the loopback API open (a request without credentials is
   * the superuser). kubectl sends no credentials over plain HTTP, so with a token and no `tls`
   * only client-node (and curl) can talk to the cluster; the
   * kubelet runs commands from pod specs, so an open API lets any local user run processes as
   * this one: fine on a single-user machine, worth a token elsewhere.
   */
  token?: string | boolean;
  /** Users known by static bearer tokens (tests acting as a named user); RBAC decides what they may do. */
  users?: StaticUser[];
  /** PEM key and certificate: serve HTTPS (kubectl sends bearer tokens only over TLS). */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** Also write a kubeconfig there (mode 0600). */
  kubeconfigPath?: string;
  /** Where pod sandboxes go; default a new temporary directory, removed on stop. */
  workDir?: string;
  /** Multiplies probe periods, initial delays and restart/pull backoffs (not timeouts or grace periods); default 1. */
  timeScale?: number;
  /** Changes kept for watches; older resourceVersions get 410 Expired. Default 10000. */
  watchHistorySize?: number;
  podAddresses?: AddressRange;
  serviceAddresses?: AddressRange;
  /** API request log and proxy problems, one line each. */
  log?: (line: string) => void;
  /** Called as each API request arrives (method, path, arrival time): for benchmarks. */
  onRequest?: (request: ObservedRequest) => void;
}

export interface SimCluster {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** The API server's port. */
  port: number;
  /** With portFallback: the requested port was in use, so `port` is another one. */
  portTaken?: number;
  /** Every pod and Service address by object key (as addressMemory takes them). */
  addressAssignments(): Record<string, string>;
  token?: string;
  kubeconfigPath?: string;
  /** For `new KubeConfig().loadFromOptions(...)`. */
  kubeConfigOptions: ReturnType<typeof kubeConfigOptions>;
  /** Pod sandboxes and claim volumes live under `<workDir>/pods` and `<workDir>/volumes`. */
  workDir: string;
  /** Process ids of every running pod process (containers and hooks). */
  processIds(): number[];
  /** now: kill every pod process at once; otherwise stop pods as on a delete (preStop, grace) first. */
  stop(options?: { now?: boolean }): Promise<void>;
}

const BERTH_BIN = fileURLToPath(new URL("../../bin/berth.js", import.meta.url));

/** The programs of this checkout: `node bin/berth.js sim-engine [flags] -- …` and `node bin/berth.js router`. */
export function berthPrograms(options: { routerImage: string; simEngineFlags?: string[]; berthCommands?: boolean }): Programs {
  return {
    engineCommand: [process.execPath, BERTH_BIN, "sim-engine", ...(options.simEngineFlags ?? [])],
    routerCommand: [process.execPath, BERTH_BIN, "router"],
    routerImage: options.routerImage,
    // Off in the simulated cluster: its install tests apply the agent's bundle without wanting its pods to run.
    ...(options.berthCommands && { berthCommand: [process.execPath, BERTH_BIN] }),
  };
}

function nodeObject(node: SimNode): KubeObject {
  const gpuResource = node.gpuType.startsWith("amd-") ? "amd.com/gpu" : "nvidia.com/gpu";
  const capacity = {
    cpu: node.cpu ?? "64",
    memory: node.memory ?? "512Gi",
    pods: "110",
    "ephemeral-storage": "1Ti",
    [gpuResource]: String(node.gpus),
  };
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const condition = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, lastHeartbeatTime: now, lastTransitionTime: now });
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: node.name,
      labels: {
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "berth-sim",
        [GPU_TYPE_LABEL]: node.gpuType,
        ...(gpuResource === "nvidia.com/gpu" && { "nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": String(node.gpus) }),
        ...node.labels,
      },
    },
    spec: { ...(node.taints && { taints: node.taints }) },
    status: {
      capacity,
      allocatable: capacity,
      conditions: [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status (berth simulated node)"),
      ],
      addresses: [
        { type: "InternalIP", address: "127.0.0.1" },
        { type: "Hostname", address: node.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: "",
        systemUUID: "",
        bootID: "",
        kernelVersion: release(),
        osImage: "berth simulated node (processes on this machine)",
        containerRuntimeVersion: "berth-sim://0.1.0",
        kubeletVersion: "v1.32.0-berth-sim",
        kubeProxyVersion: "v1.32.0-berth-sim",
        operatingSystem: "linux",
        architecture: "amd64",
      },
    },
  };
}

export async function startSimCluster(options: SimClusterOptions): Promise<SimCluster> {
  const names = new Set(options.nodes.map((n) => n.name));
  if (names.size !== options.nodes.length) throw new Error("simulated node names must be unique");
  reapOrphans();
  const ownWorkDir = options.workDir === undefined;
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), "berth-sim-"));
  let stopping = false;
  const assignments = () => ({ ...podAddresses.assigned(), ...serviceAddresses.assigned() });
  const memory: AddressMemory = {
    remembered: options.addressMemory?.remembered ?? {},
    onChange: () => {
      if (!stopping) options.addressMemory?.onChange?.(assignments());
    },
  };
  const podAddresses = new AddressPool(options.podAddresses?.first ?? "127.0.1.1", options.podAddresses?.last ?? "127.0.199.254", memory);
  const serviceAddresses = new AddressPool(options.serviceAddresses?.first ?? "127.0.200.1", options.serviceAddresses?.last ?? "127.0.255.254", memory);
  const store = new Store(options.watchHistorySize ?? 10_000);
  const registry = new Registry(store, {
    allocateClusterIP: (key) => serviceAddresses.allocate(key),
    releaseClusterIP: (ip) => serviceAddresses.release(ip),
  });
  const log = options.log ?? (() => {});

  for (const name of ["default", "kube-system", "kube-public", "kube-node-lease"]) {
    await registry.create(resourceOf("namespaces"), undefined, { metadata: { name } }, { fieldManager: "kube-apiserver" });
  }
  for (const node of options.nodes) await registry.create(resourceOf("nodes"), undefined, nodeObject(node), { fieldManager: "kubelet" });

  const kubelet = new Kubelet({
    cluster: simKubeletCluster(registry, store, new EventRecorder(registry, "kubelet", "berth-sim")),
    nodes: options.nodes,
    programs: options.programs,
    addresses: podAddresses,
    workDir,
    timeScale: options.timeScale ?? 1,
  });
  const scheduler = new SchedulingLoop(store, registry, new EventRecorder(registry, "default-scheduler"));
  const endpoints = new EndpointsController(store, registry);
  const proxy = new ServiceProxy(store, log);
  const deployments = new DeploymentController(store, registry, new EventRecorder(registry, "deployment-controller"));
  const jobs = new JobController(store, registry, new EventRecorder(registry, "job-controller"));
  const namespaces = new NamespaceController(store, registry);
  const volumes = new VolumeController(store, workDir);
  for (const controller of [scheduler, kubelet, endpoints, proxy, deployments, jobs, namespaces, volumes]) controller.start();
  const stopEventExpiry = startEventExpiry(registry);

  const token = typeof options.token === "string" ? options.token : options.token === true ? crypto.randomUUID().replaceAll("-", "") : undefined;
  const listen = (port: number | undefined) =>
    startApiServer({ registry, logs: kubelet, host: options.host, port, token, users: options.users, tls: options.tls, log: options.log, onRequest: options.onRequest });
  let server: Awaited<ReturnType<typeof startApiServer>>;
  let portTaken: number | undefined;
  try {
    server = await listen(options.port);
  } catch (error) {
    if (!options.portFallback || (error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
    portTaken = options.port;
    server = await listen(0);
  }
  const kubeconfigPath = options.kubeconfigPath ? writeKubeconfig(options.kubeconfigPath, server.url, { token }) : undefined;

  let stopped: Promise<void> | undefined;
  return {
    url: server.url,
    port: Number(new URL(server.url).port),
    ...(portTaken !== undefined && { portTaken }),
    addressAssignments: assignments,
    ...(token && { token }),
    ...(kubeconfigPath && { kubeconfigPath }),
    kubeConfigOptions: kubeConfigOptions(server.url, { token }),
    workDir,
    processIds: () => kubelet.pids(),
    stop: (stopOptions = {}) =>
      (stopped ??= (async () => {
        stopping = true;
        await kubelet.stop(stopOptions);
        for (const controller of [scheduler, endpoints, proxy, deployments, jobs, namespaces, volumes]) controller.stop();
        stopEventExpiry();
        await server.close();
        podAddresses.close();
        serviceAddresses.close();
        if (ownWorkDir) rmSync(workDir, { recursive: true, force: true });
      })()),
  };
}
