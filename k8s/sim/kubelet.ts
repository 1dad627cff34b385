// The process kubelet: runs the pods bound to the simulated nodes as processes on this
// machine. Per pod: its own loopback address (status.podIP, BERTH_POD_IP), a sandbox
// directory where configMap/secret/emptyDir volumes are written (argv words and env values
// under a mount path are pointed there), and per container a loop: pull (an image with no
// simulated program → ErrImagePull / ImagePullBackOff), build the environment (fieldRef,
// secretKeyRef… → CreateContainerConfigError), expand `$(VAR)`, start, probe, and on exit
// restart by restartPolicy with the kubelet's backoff (10 s doubling to 5 min, the first
// restart at once: CrashLoopBackOff, lastState.terminated, restartCount). Startup, readiness
// and liveness probes run against the pod address; readiness drives the Ready condition.
// Deleting a pod runs preStop (exec on this machine with the container's env, or httpGet),
// then SIGTERM, then SIGKILL of the container's process group when the grace period ends;
// then the pod object is removed. `stop({ now: true })` kills every process group at once.
// Probe periods, initial delays and backoffs are multiplied by `timeScale` (timeouts and
// grace periods never are). Containers of `programs.noProcessImages` start no process: Running,
// started and Ready at once, stopped at once (no probes, no preStop), for scale tests.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import type { V1Container, V1LifecycleHandler, V1Probe, V1Volume } from "@kubernetes/client-node";
import { isGpuType } from "../../src/domain/gpu-profiles.ts";
import type { PodLogRequest, PodLogSource } from "./api-server.ts";
import type { AddressPool } from "./ip-pool.ts";
import { LogBuffer } from "./log-buffer.ts";
import { ApiError, timestamp, type KubeObject } from "./objects.ts";
import { OWNER_ENV } from "./orphans.ts";
import { goDuration, podConditions, podPhase, type ContainerState, type ContainerStatus, type TerminatedState } from "./pod-status.ts";
import { runProbe, type ProbeSpec, type ProbeTarget } from "./probes.ts";
import { classifyImage, EnvError, expandReferences, normalizeImage, resolveEnv, resolveProgram, rewriteMountedPaths, runsNoProcess, type Programs } from "./program.ts";
import { claimDir } from "./volumes.ts";
import { WorkQueue } from "./work-queue.ts";

type Dict = Record<string, any>;

export interface KubeletNode {
  name: string;
  gpuType: string;
}

/**
 * What the kubelet needs of a cluster: the simulated one's registry in this process
 * (sim-kubelet-cluster.ts), or any kube-apiserver through client-node (k8s/node).
 */
export interface KubeletCluster {
  /** Calls `onPod` for every pod bound to one of `nodeNames` now and on each later change, deletion too; returns a stop. */
  watchPods(nodeNames: ReadonlySet<string>, onPod: (pod: KubeObject) => void): () => void;
  /** The pod as last seen, or undefined once it is gone. */
  pod(namespace: string, name: string): KubeObject | undefined;
  /** A Secret, ConfigMap or PersistentVolumeClaim a pod uses; undefined when it does not exist. */
  read(resource: "secrets" | "configmaps" | "persistentvolumeclaims", namespace: string, name: string): Promise<KubeObject | undefined>;
  /** Throws when the write was refused or not answered (it is tried again); a pod already gone is no error. */
  writePodStatus(pod: KubeObject, status: Record<string, unknown>): Promise<void>;
  /** Removes a pod whose containers have all stopped (the last step of a graceful delete). */
  removePod(pod: KubeObject): Promise<void>;
  event(pod: KubeObject, type: "Normal" | "Warning", reason: string, message: string, fieldPath?: string): void;
  /**
   * A token for the pod's ServiceAccount bound to the pod (TokenRequest), for a projected
   * serviceAccountToken volume. Absent: projected volumes are not written (the simulated cluster).
   */
  serviceAccountToken?(pod: KubeObject, request: { audience?: string; expirationSeconds: number }): Promise<string>;
}

/** Where client libraries look for the in-cluster credentials. */
export const SERVICE_ACCOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * Run as `unshare --mount … sh -c SCRIPT sh <volume dir> <argv…>`: in a mount namespace of its own
 * the process finds the pod's service-account volume at its standard path (over a fresh /run), and
 * nothing of the host's /run.
 */
const SERVICE_ACCOUNT_MOUNT_SCRIPT =
  'set -e; src="$1"; shift; mount -t tmpfs -o mode=755 tmpfs /run; mkdir -p /run/secrets/kubernetes.io/serviceaccount; mount --bind "$src" /run/secrets/kubernetes.io/serviceaccount; exec "$@"';

export interface KubeletOptions {
  cluster: KubeletCluster;
  nodes: readonly KubeletNode[];
  programs: Programs;
  addresses: AddressPool;
  /** Pod sandboxes are created under `<workDir>/pods`. */
  workDir: string;
  timeScale: number;
  /** Host address nodes report (status.hostIP). */
  hostIP?: string;
  /** Variables every container gets (a real kubelet's KUBERNETES_SERVICE_HOST and _PORT). */
  podEnv?: Record<string, string>;
  /**
   * Each container gets its sandbox as HOME and, when it mounts one, its service-account volume
   * at SERVICE_ACCOUNT_PATH through a mount namespace of its own (needs root and unshare), so a
   * client library's in-cluster configuration is the pod's, never this machine's kubeconfig.
   */
  isolatePods?: boolean;
}

const RESTART_BACKOFF_BASE_MS = 10_000;
const RESTART_BACKOFF_MAX_MS = 300_000;
/** A container that ran this long without failing starts its backoff afresh. */
const BACKOFF_RESET_MS = 600_000;
/** The kubelet gives a container at least this long after preStop before SIGKILL. */
const MIN_GRACE_AFTER_HOOK_MS = 2_000;
/** A status write the cluster refused is tried again this often, this many times in a row. */
const STATUS_RETRY_MS = 1_000;
const STATUS_WRITE_ATTEMPTS = 30;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    timer.unref();
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/** The base environment of every simulated process (a container sees only its own variables plus these). */
function hostEnv(): Record<string, string> {
  const keep = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "USER"];
  const out: Record<string, string> = {};
  for (const key of keep) if (process.env[key] !== undefined) out[key] = process.env[key]!;
  out[OWNER_ENV] = String(process.pid);
  return out;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Could not start at all (no such executable). */
  error?: string;
}

class ContainerRunner {
  state: ContainerState = { waiting: { reason: "ContainerCreating" } };
  lastState: ContainerState = {};
  restartCount = 0;
  ready = false;
  started = false;
  ran = false;
  crashes = 0;
  child?: ChildProcess;
  exit?: Promise<Exit>;
  stopping?: Promise<void>;
  hooks = new Set<ChildProcess>();
  runStartedAt = 0;
  containerID?: string;
  logs?: LogBuffer;
  previousLogs?: LogBuffer;
  /** Increments per start: probe loops of an earlier run stop. */
  epoch = 0;
  /** The environment of the current run (hooks and exec probes get it too). */
  env: Record<string, string> = {};
  /** Ends the current run of a no-process container (`programs.noProcessImages`). */
  endNoProcess?: () => void;

  constructor(readonly spec: V1Container) {}

  get name(): string {
    return this.spec.name;
  }

  status(): ContainerStatus {
    const image = this.spec.image ?? "";
    return {
      name: this.name,
      state: this.state,
      lastState: this.lastState,
      ready: this.ready && this.state.running !== undefined,
      started: this.started && this.state.running !== undefined,
      restartCount: this.restartCount,
      image,
      imageID: this.ran ? `berth-sim://image/${normalizeImage(image)}` : "",
      ...(this.containerID && (this.state.running || this.state.terminated) && { containerID: this.containerID }),
    };
  }
}

interface EnvSources {
  secrets: Map<string, KubeObject | undefined>;
  configMaps: Map<string, KubeObject | undefined>;
}

class PodWorker {
  pod: KubeObject;
  readonly uid: string;
  readonly containers: ContainerRunner[];
  ip?: string;
  sandbox?: string;
  startTime?: string;
  /** Per container: mount path → host directory of the volumes written for this pod. */
  readonly mounts = new Map<string, Map<string, string>>();
  terminating = false;
  killed = false;
  /** Wakes waits (backoff, mount retries) when the pod starts terminating. */
  readonly abort = new AbortController();
  /** Ends probe loops when the processes are killed. */
  readonly #killSignal = new AbortController();
  #publishQueued = false;
  /** The status writer while it runs: writes go one at a time (statusWriter). */
  #writer?: Promise<void>;
  #done?: Promise<void>;
  /** When the grace period runs out (may shrink if the pod is deleted again with a shorter one). */
  deadline = Infinity;

  constructor(
    private readonly kubelet: Kubelet,
    pod: KubeObject,
  ) {
    this.pod = pod;
    this.uid = pod.metadata.uid!;
    this.containers = ((pod.spec as Dict).containers as V1Container[]).map((spec) => new ContainerRunner(spec));
  }

  get namespace(): string {
    return this.pod.metadata.namespace!;
  }

  get name(): string {
    return this.pod.metadata.name!;
  }

  get spec(): Dict {
    return this.pod.spec as Dict;
  }

  get stopping(): boolean {
    return this.terminating || this.killed;
  }

  /** `name_namespace(uid)`, how the kubelet names a pod in messages. */
  get label(): string {
    return `${this.name}_${this.namespace}(${this.uid})`;
  }

  sync(pod: KubeObject): void {
    this.pod = pod;
    // Failures inside are events and retries; one that escapes is reported, never a crash of the node.
    if (!this.#done) this.#done = this.#run().catch((error: unknown) => this.event("Warning", "Failed", `pod worker stopped: ${(error as Error).message}`));
    if (pod.metadata.deletionTimestamp) {
      const grace = pod.metadata.deletionGracePeriodSeconds ?? this.spec.terminationGracePeriodSeconds ?? 30;
      this.deadline = Math.min(this.deadline, Date.now() + grace * 1000);
      if (!this.terminating) void this.#terminate();
    }
  }

  event(type: "Normal" | "Warning", reason: string, message: string, container?: ContainerRunner): void {
    this.kubelet.options.cluster.event(this.pod, type, reason, message, container && `spec.containers{${container.name}}`);
  }

  /** Coalesces status writes: one per tick with everything that changed. */
  publish(): void {
    if (this.#publishQueued || this.killed) return;
    this.#publishQueued = true;
    setImmediate(() => void this.#statusWriter());
  }

  /** Writes the status now (after any write in flight) and resolves once it landed or was given up. */
  async flushStatus(): Promise<void> {
    // A writer already running sees the flag before it stops; otherwise this starts one.
    this.#publishQueued = true;
    await this.#statusWriter();
  }

  /**
   * One writer per pod, as the kubelet's status manager has: a write starts only after the last
   * one answered, with the newest status (two in flight can land out of order on an API server,
   * an older "not ready" last), and a write that failed is tried again.
   */
  #statusWriter(): Promise<void> {
    if (this.#writer) return this.#writer;
    const run = async () => {
      let failures = 0;
      while (this.#publishQueued && !this.killed) {
        this.#publishQueued = false;
        try {
          await this.writeStatus();
          failures = 0;
        } catch {
          if (++failures > STATUS_WRITE_ATTEMPTS) return;
          this.#publishQueued = true;
          await sleep(STATUS_RETRY_MS);
        }
      }
    };
    this.#writer = run().finally(() => (this.#writer = undefined));
    return this.#writer;
  }

  /** One status write; throws when the cluster refused it (the pod being gone is not a failure). */
  async writeStatus(): Promise<void> {
    const { cluster } = this.kubelet.options;
    const current = cluster.pod(this.namespace, this.name);
    if (!current || current.metadata.uid !== this.uid) return;
    const previous = (current.status ?? {}) as Dict;
    const statuses = this.containers.map((c) => c.status());
    const status = {
      phase: podPhase(this.spec.restartPolicy ?? "Always", statuses, this.terminating && this.containers.every((c) => !c.child)),
      conditions: podConditions({ sandboxReady: this.ip !== undefined, statuses, now: timestamp() }, previous.conditions ?? []),
      hostIP: this.kubelet.hostIP,
      hostIPs: [{ ip: this.kubelet.hostIP }],
      ...(this.ip && { podIP: this.ip, podIPs: [{ ip: this.ip }] }),
      ...(this.startTime && { startTime: this.startTime }),
      containerStatuses: statuses,
      qosClass: previous.qosClass,
    };
    await cluster.writePodStatus(current, status);
  }

  async #run(): Promise<void> {
    const { options } = this.kubelet;
    try {
      this.ip = await options.addresses.allocate(`pods/${this.namespace}/${this.name}`);
    } catch (error) {
      this.event("Warning", "FailedCreatePodSandBox", `Failed to create pod sandbox: ${(error as Error).message}`);
      return;
    }
    if (this.killed) return this.#release();
    this.sandbox = join(options.workDir, "pods", `${this.namespace}_${this.name}_${this.uid}`);
    mkdirSync(this.sandbox, { recursive: true });
    this.startTime = timestamp();
    this.publish();
    await this.#mountVolumes();
    await Promise.all(this.containers.map((c) => this.#runContainer(c)));
  }

  // ---------------------------------------------------------------------------------------------
  // Volumes

  /** Writes configMap, secret and emptyDir volumes; retries (FailedMount) until the sources exist. */
  async #mountVolumes(): Promise<void> {
    const { cluster, timeScale } = this.kubelet.options;
    for (let attempt = 1; !this.stopping; attempt++) {
      const problems: string[] = [];
      const hostDirs = new Map<string, string>();
      for (const volume of (this.spec.volumes ?? []) as V1Volume[]) {
        const dir = join(this.sandbox!, "volumes", volume.name);
        const source = volume.configMap ?? volume.secret;
        if (source) {
          const isSecret = volume.secret !== undefined;
          const sourceName = isSecret ? volume.secret!.secretName! : volume.configMap!.name!;
          let object: KubeObject | undefined;
          try {
            object = await cluster.read(isSecret ? "secrets" : "configmaps", this.namespace, sourceName);
          } catch (error) {
            // E.g. the Node authorizer before its graph links the pod to the object: tried again.
            problems.push(`MountVolume.SetUp failed for volume "${volume.name}" : ${(error as Error).message}`);
            continue;
          }
          if (!object) {
            if (!source.optional) problems.push(`MountVolume.SetUp failed for volume "${volume.name}" : ${isSecret ? "secret" : "configmap"} "${sourceName}" not found`);
            mkdirSync(dir, { recursive: true });
            hostDirs.set(volume.name, dir);
            continue;
          }
          const data = dataOf(object, isSecret);
          const items = source.items ?? Object.keys(data).map((key) => ({ key, path: key }));
          mkdirSync(dir, { recursive: true });
          for (const item of items) {
            if (data[item.key] === undefined) {
              if (!source.optional) problems.push(`MountVolume.SetUp failed for volume "${volume.name}" : couldn't find key ${item.key} in ${isSecret ? "Secret" : "ConfigMap"} ${this.namespace}/${sourceName}`);
              continue;
            }
            const file = join(dir, item.path);
            mkdirSync(join(file, ".."), { recursive: true });
            writeFileSync(file, data[item.key]!, { mode: isSecret ? 0o600 : 0o644 });
          }
          hostDirs.set(volume.name, dir);
        } else if (volume.emptyDir) {
          mkdirSync(dir, { recursive: true });
          hostDirs.set(volume.name, dir);
        } else if (volume.projected && cluster.serviceAccountToken) {
          mkdirSync(dir, { recursive: true });
          problems.push(...(await this.#writeProjected(volume, dir)));
          hostDirs.set(volume.name, dir);
        } else if (volume.persistentVolumeClaim) {
          // Every pod of a claim shares its volume's one host directory (volumes.ts).
          const claimName = volume.persistentVolumeClaim.claimName;
          const claim = await cluster.read("persistentvolumeclaims", this.namespace, claimName).catch((error: Error) => {
            problems.push(`MountVolume.SetUp failed for volume "${volume.name}" : ${error.message}`);
            return null;
          });
          if (claim === null) continue;
          if (!claim || (claim.status as Dict | undefined)?.phase !== "Bound") {
            problems.push(`MountVolume.SetUp failed for volume "${volume.name}" : persistentvolumeclaim "${claimName}" ${claim ? "is not bound" : "not found"}`);
            continue;
          }
          const shared = claimDir(this.kubelet.options.workDir, claim);
          mkdirSync(shared, { recursive: true });
          hostDirs.set(volume.name, shared);
        }
        // hostPath and the rest are not materialized: nothing in a simulated pod reads them.
      }
      if (problems.length === 0) {
        for (const container of this.containers) {
          const mounts = new Map<string, string>();
          for (const mount of container.spec.volumeMounts ?? []) {
            const dir = hostDirs.get(mount.name);
            if (dir && mount.mountPath !== "/dev/shm") mounts.set(mount.mountPath, mount.subPath ? join(dir, mount.subPath) : dir);
          }
          this.mounts.set(container.name, mounts);
        }
        return;
      }
      for (const problem of problems) this.event("Warning", "FailedMount", problem);
      await sleep(Math.min(2 ** attempt, 60) * 1000 * timeScale, this.abort.signal);
    }
  }

  /** A projected volume's sources (the kube-api-access volume every pod gets): token, CA, namespace. */
  async #writeProjected(volume: V1Volume, dir: string): Promise<string[]> {
    const { cluster } = this.kubelet.options;
    const problems: string[] = [];
    const write = (path: string, content: string, mode = 0o644) => {
      const file = join(dir, path);
      mkdirSync(join(file, ".."), { recursive: true });
      writeFileSync(file, content, { mode });
    };
    for (const source of volume.projected!.sources ?? []) {
      try {
        if (source.serviceAccountToken) {
          const token = await cluster.serviceAccountToken!(this.pod, {
            audience: source.serviceAccountToken.audience,
            expirationSeconds: source.serviceAccountToken.expirationSeconds ?? 3607,
          });
          write(source.serviceAccountToken.path, token, 0o600);
        } else if (source.configMap) {
          const object = await cluster.read("configmaps", this.namespace, source.configMap.name!);
          if (!object) {
            if (!source.configMap.optional) problems.push(`MountVolume.SetUp failed for volume "${volume.name}" : configmap "${source.configMap.name}" not found`);
            continue;
          }
          const data = dataOf(object, false);
          for (const item of source.configMap.items ?? Object.keys(data).map((key) => ({ key, path: key }))) {
            if (data[item.key] !== undefined) write(item.path, data[item.key]!);
          }
        } else if (source.downwardAPI) {
          for (const item of source.downwardAPI.items ?? []) {
            const path = item.fieldRef?.fieldPath;
            const value = path === "metadata.namespace" ? this.namespace : path === "metadata.name" ? this.name : path === "metadata.uid" ? this.uid : undefined;
            if (value !== undefined) write(item.path, value);
          }
        }
      } catch (error) {
        problems.push(`MountVolume.SetUp failed for volume "${volume.name}" : ${(error as Error).message}`);
      }
    }
    return problems;
  }

  // ---------------------------------------------------------------------------------------------
  // Containers

  #setWaiting(c: ContainerRunner, reason: string, message?: string): void {
    c.state = { waiting: { reason, ...(message && { message }) } };
    c.ready = false;
    c.started = false;
    this.publish();
  }

  /** The Secrets and ConfigMaps a container's env and envFrom name, read before its environment is built. */
  async #envSources(c: ContainerRunner): Promise<EnvSources> {
    const { cluster } = this.kubelet.options;
    const secretNames = new Set<string>();
    const configMapNames = new Set<string>();
    for (const variable of c.spec.env ?? []) {
      if (variable.valueFrom?.secretKeyRef?.name) secretNames.add(variable.valueFrom.secretKeyRef.name);
      if (variable.valueFrom?.configMapKeyRef?.name) configMapNames.add(variable.valueFrom.configMapKeyRef.name);
    }
    for (const source of c.spec.envFrom ?? []) {
      if (source.secretRef?.name) secretNames.add(source.secretRef.name);
      if (source.configMapRef?.name) configMapNames.add(source.configMapRef.name);
    }
    const read = async (resource: "secrets" | "configmaps", names: Set<string>) =>
      new Map(await Promise.all([...names].map(async (name) => [name, await cluster.read(resource, this.namespace, name)] as const)));
    return { secrets: await read("secrets", secretNames), configMaps: await read("configmaps", configMapNames) };
  }

  #envContext(c: ContainerRunner, sources: EnvSources) {
    const pod = this.pod;
    const resources = (c.spec.resources ?? {}) as Dict;
    return {
      field: (path: string) => {
        const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
        if (label) return (pod.metadata[label[1] as "labels"] ?? {})[label[2]!] ?? "";
        switch (path) {
          case "metadata.name":
            return pod.metadata.name;
          case "metadata.namespace":
            return pod.metadata.namespace;
          case "metadata.uid":
            return pod.metadata.uid;
          case "spec.nodeName":
            return this.spec.nodeName;
          case "spec.serviceAccountName":
            return this.spec.serviceAccountName ?? "default";
          case "status.podIP":
          case "status.podIPs":
            return this.ip;
          case "status.hostIP":
          case "status.hostIPs":
            return this.kubelet.hostIP;
          default:
            return undefined;
        }
      },
      resource: (name: string) => {
        const [kind, key] = name.split(".") as ["limits" | "requests", string];
        const value = resources[kind]?.[key];
        return value === undefined ? undefined : String(value);
      },
      secret: (name: string) => {
        const object = sources.secrets.get(name);
        return object ? dataOf(object, true) : undefined;
      },
      configMap: (name: string) => {
        const object = sources.configMaps.get(name);
        return object ? dataOf(object, false) : undefined;
      },
    };
  }

  async #runContainer(c: ContainerRunner): Promise<void> {
    const { options } = this.kubelet;
    const { programs, timeScale } = options;
    const image = c.spec.image ?? "";
    let pullFailures = 0;
    let configFailures = 0;
    while (!this.stopping) {
      if (!runsNoProcess(image, programs) && classifyImage(image, programs.routerImage) === "unknown") {
        pullFailures++;
        this.event("Normal", "Pulling", `Pulling image "${image}"`, c);
        await sleep(200, this.abort.signal);
        if (this.stopping) break;
        const ref = `docker.io/${normalizeImage(image).includes("/") ? "" : "library/"}${normalizeImage(image)}`;
        const why = `rpc error: code = NotFound desc = failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": ${ref}: not found (berth-sim runs only vllm/*, lmsysorg/sglang* and ${programs.routerImage})`;
        this.#setWaiting(c, "ErrImagePull", why);
        this.event("Warning", "Failed", `Failed to pull image "${image}": ${why}`, c);
        this.event("Warning", "Failed", "Error: ErrImagePull", c);
        await sleep(1000 * timeScale, this.abort.signal);
        if (this.stopping) break;
        this.#setWaiting(c, "ImagePullBackOff", `Back-off pulling image "${image}"`);
        this.event("Normal", "BackOff", `Back-off pulling image "${image}"`, c);
        this.event("Warning", "Failed", "Error: ImagePullBackOff", c);
        await sleep(Math.min(RESTART_BACKOFF_BASE_MS * 2 ** (pullFailures - 1), RESTART_BACKOFF_MAX_MS) * timeScale, this.abort.signal);
        continue;
      }
      let env: Map<string, string>;
      try {
        env = resolveEnv(c.spec.env as never, c.spec.envFrom as never, this.#envContext(c, await this.#envSources(c)));
      } catch (error) {
        // A missing key or object (EnvError), or a read the cluster refused or did not answer: tried again.
        const message = error instanceof EnvError ? error.message : `failed to read the container's configuration: ${(error as Error).message}`;
        configFailures++;
        this.#setWaiting(c, "CreateContainerConfigError", message);
        this.event("Warning", "Failed", `Error: ${message}`, c);
        await sleep(Math.min(2 ** configFailures, 60) * 1000 * timeScale, this.abort.signal);
        continue;
      }
      await this.#startContainer(c, env);
      if (this.stopping) {
        this.publish();
        break;
      }
      const policy = this.spec.restartPolicy ?? "Always";
      const terminated = c.state.terminated!;
      if (policy === "Never" || (policy === "OnFailure" && terminated.exitCode === 0)) {
        this.publish();
        break;
      }
      c.lastState = { terminated };
      c.crashes = Date.now() - c.runStartedAt >= BACKOFF_RESET_MS ? 1 : c.crashes + 1;
      // The first restart is immediate; then 10 s, 20 s, 40 s … up to 5 min.
      const delay = c.crashes <= 1 ? 0 : Math.min(RESTART_BACKOFF_BASE_MS * 2 ** (c.crashes - 2), RESTART_BACKOFF_MAX_MS) * timeScale;
      if (delay > 0) {
        this.#setWaiting(c, "CrashLoopBackOff", `back-off ${goDuration(delay)} restarting failed container=${c.name} pod=${this.label}`);
        this.event("Warning", "BackOff", `Back-off restarting failed container ${c.name} in pod ${this.label}`, c);
        await sleep(delay, this.abort.signal);
      }
    }
  }

  /** Starts one run of a container, probes it, and resolves when the process is gone. */
  async #startContainer(c: ContainerRunner, env: Map<string, string>): Promise<Exit> {
    const { options } = this.kubelet;
    const lookup = (name: string) => env.get(name);
    const mounts = this.mounts.get(c.name) ?? new Map<string, string>();
    const command = (c.spec.command ?? []).map((word) => rewriteMountedPaths(expandReferences(word, lookup), mounts));
    const args = (c.spec.args ?? []).map((word) => rewriteMountedPaths(expandReferences(word, lookup), mounts));
    const node = options.nodes.find((n) => n.name === this.spec.nodeName);
    const program = resolveProgram({
      image: c.spec.image ?? "",
      command,
      args,
      env,
      programs: options.programs,
      engineFlags: node && isGpuType(node.gpuType) && !options.programs.engineCommand.includes("--gpu-type") ? ["--gpu-type", node.gpuType] : [],
      nodePath: process.execPath,
    });
    const processEnv: Record<string, string> = {
      ...hostEnv(),
      ...options.podEnv,
      ...(options.isolatePods && { HOME: this.sandbox! }),
      HOSTNAME: this.spec.hostname ?? this.name,
      BERTH_POD_IP: this.ip!,
    };
    // Paths inside JSON flags (vLLM's --ec-transfer-config shared_storage_path) are not argv words
    // the kubelet can point elsewhere: the process maps them itself with this table.
    if (mounts.size > 0) processEnv.BERTH_VOLUME_MOUNTS = JSON.stringify(Object.fromEntries(mounts));
    for (const [key, value] of env) processEnv[key] = rewriteMountedPaths(value, mounts);
    c.env = processEnv;

    if (c.ran) c.restartCount++;
    c.ran = true;
    c.epoch++;
    // A new process has no stop in progress. The previous run's stop may not have cleared its
    // promise yet (a restart right after a probe kill can come first): without this, a later
    // delete would find that settled promise and never signal the new process.
    c.stopping = undefined;
    if (c.logs) c.previousLogs = c.logs;
    c.logs = new LogBuffer();
    c.runStartedAt = Date.now();
    const startedAt = timestamp(c.runStartedAt);
    this.event("Normal", "Pulled", `Container image "${c.spec.image}" already present on machine`, c);
    const programArgv = program.kind === "unknown-image" || program.kind === "no-process" ? [] : program.argv;
    const serviceAccountDir = options.isolatePods ? mounts.get(SERVICE_ACCOUNT_PATH) : undefined;
    const argv =
      serviceAccountDir && programArgv.length > 0
        ? ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", SERVICE_ACCOUNT_MOUNT_SCRIPT, "sh", serviceAccountDir, ...programArgv]
        : programArgv;

    const exit = new Promise<Exit>((resolve) => {
      if (this.stopping) return resolve({ code: null, signal: "SIGKILL" });
      if (program.kind === "no-process") return void (c.endNoProcess = () => resolve({ code: 0, signal: null }));
      if (argv.length === 0) return resolve({ code: null, signal: null, error: `no command specified` });
      let child: ChildProcess;
      try {
        child = spawn(argv[0]!, argv.slice(1), { env: processEnv, cwd: this.sandbox, stdio: ["ignore", "pipe", "pipe"], detached: true });
      } catch (error) {
        return resolve({ code: null, signal: null, error: (error as Error).message });
      }
      c.child = child;
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => c.logs!.append("stdout", chunk));
      child.stderr!.setEncoding("utf8").on("data", (chunk: string) => c.logs!.append("stderr", chunk));
      let settled = false;
      child.once("error", (error: NodeJS.ErrnoException) => {
        if (settled) return;
        settled = true;
        resolve({ code: null, signal: null, error: error.code === "ENOENT" ? `exec: "${argv[0]}": executable file not found in $PATH` : error.message });
      });
      child.once("exit", (code, signal) => {
        // Whatever the main process left behind dies with the container.
        killGroup(child.pid, "SIGKILL");
        if (settled) return;
        settled = true;
        // The last lines may still be in the pipes: wait for them (briefly: a stray holder was just killed).
        const timer = setTimeout(() => resolve({ code, signal }), 500);
        child.once("close", () => {
          clearTimeout(timer);
          resolve({ code, signal });
        });
      });
    });
    c.exit = exit;
    if (c.child?.pid !== undefined) {
      c.containerID = `berth-sim://${c.child.pid}`;
      c.state = { running: { startedAt } };
      this.publish();
      this.event("Normal", "Created", `Created container: ${c.name}`, c);
      this.event("Normal", "Started", `Started container ${c.name}`, c);
      void this.#probe(c, c.epoch);
    } else if (c.endNoProcess) {
      c.containerID = `berth-sim://no-process/${this.uid}/${c.name}`;
      c.state = { running: { startedAt } };
      c.started = true;
      c.ready = true;
      this.publish();
      this.event("Normal", "Created", `Created container: ${c.name}`, c);
      this.event("Normal", "Started", `Started container ${c.name} (no process)`, c);
    }
    const result = await exit;
    c.child = undefined;
    c.endNoProcess = undefined;
    c.ready = false;
    c.started = false;
    const finishedAt = timestamp();
    let terminated: TerminatedState;
    if (result.error) {
      const message = `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: ${result.error}: unknown`;
      c.logs.close();
      terminated = { exitCode: 128, reason: "StartError", message, startedAt: timestamp(0), finishedAt, containerID: c.containerID };
      this.event("Warning", "Failed", `Error: ${message}`, c);
    } else {
      c.logs.close();
      const signalNumber = result.signal ? SIGNALS[result.signal] ?? 0 : 0;
      const exitCode = result.code ?? 128 + signalNumber;
      terminated = {
        exitCode,
        ...(result.signal && { signal: signalNumber }),
        reason: exitCode === 0 ? "Completed" : "Error",
        startedAt,
        finishedAt,
        ...(c.containerID && { containerID: c.containerID }),
      };
    }
    c.state = { terminated };
    this.publish();
    return result;
  }

  // ---------------------------------------------------------------------------------------------
  // Probes

  #target(c: ContainerRunner): ProbeTarget {
    return { podIP: this.ip!, ports: (c.spec.ports ?? []) as ProbeTarget["ports"], env: c.env, cwd: this.sandbox! };
  }

  async #probe(c: ContainerRunner, epoch: number): Promise<void> {
    const { timeScale } = this.kubelet.options;
    const alive = () => c.epoch === epoch && c.state.running !== undefined && !this.killed;
    const scaled = (seconds: number | undefined, fallback: number) => (seconds ?? fallback) * 1000 * timeScale;
    const startup = c.spec.startupProbe as V1Probe | undefined;
    if (startup) {
      await sleep(scaled(startup.initialDelaySeconds, 0), this.#killSignal.signal);
      let failures = 0;
      while (alive()) {
        const result = await runProbe(startup as ProbeSpec, this.#target(c));
        if (!alive()) return;
        if (result.ok) break;
        failures++;
        this.event("Warning", "Unhealthy", `Startup probe failed: ${result.message}`, c);
        if (failures >= (startup.failureThreshold ?? 3)) {
          this.event("Normal", "Killing", `Container ${c.name} failed startup probe, will be restarted`, c);
          return this.stopContainer(c, startup.terminationGracePeriodSeconds ?? this.spec.terminationGracePeriodSeconds ?? 30, true);
        }
        await sleep(scaled(startup.periodSeconds, 10), this.#killSignal.signal);
      }
    }
    if (!alive()) return;
    c.started = true;
    this.publish();
    await Promise.all([this.#readiness(c, alive, scaled), this.#liveness(c, alive, scaled)]);
  }

  async #readiness(c: ContainerRunner, alive: () => boolean, scaled: (s: number | undefined, f: number) => number): Promise<void> {
    const probe = c.spec.readinessProbe as V1Probe | undefined;
    if (!probe) {
      c.ready = true;
      this.publish();
      return;
    }
    await sleep(scaled(probe.initialDelaySeconds, 0), this.#killSignal.signal);
    let successes = 0;
    let failures = 0;
    while (alive()) {
      const result = await runProbe(probe as ProbeSpec, this.#target(c));
      if (!alive()) return;
      if (result.ok) {
        failures = 0;
        if (++successes >= (probe.successThreshold ?? 1) && !c.ready) {
          c.ready = true;
          this.publish();
        }
      } else {
        successes = 0;
        failures++;
        this.event("Warning", "Unhealthy", `Readiness probe failed: ${result.message}`, c);
        if (failures >= (probe.failureThreshold ?? 3) && c.ready) {
          c.ready = false;
          this.publish();
        }
      }
      await sleep(scaled(probe.periodSeconds, 10), this.#killSignal.signal);
    }
  }

  async #liveness(c: ContainerRunner, alive: () => boolean, scaled: (s: number | undefined, f: number) => number): Promise<void> {
    const probe = c.spec.livenessProbe as V1Probe | undefined;
    if (!probe) return;
    await sleep(scaled(probe.initialDelaySeconds, 0), this.#killSignal.signal);
    let failures = 0;
    while (alive()) {
      const result = await runProbe(probe as ProbeSpec, this.#target(c));
      if (!alive()) return;
      if (result.ok) failures = 0;
      else {
        failures++;
        this.event("Warning", "Unhealthy", `Liveness probe failed: ${result.message}`, c);
        if (failures >= (probe.failureThreshold ?? 3)) {
          this.event("Normal", "Killing", `Container ${c.name} failed liveness probe, will be restarted`, c);
          return this.stopContainer(c, probe.terminationGracePeriodSeconds ?? this.spec.terminationGracePeriodSeconds ?? 30, true);
        }
      }
      await sleep(scaled(probe.periodSeconds, 10), this.#killSignal.signal);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Stopping

  /** preStop, SIGTERM, and SIGKILL once the grace period is over; resolves when the process is gone. */
  stopContainer(c: ContainerRunner, graceSeconds: number, runHook: boolean): Promise<void> {
    if (c.stopping) return c.stopping;
    const child = c.child;
    const exit = c.exit;
    if (c.endNoProcess && exit) {
      this.event("Normal", "Killing", `Stopping container ${c.name}`, c);
      c.endNoProcess();
      return exit.then(() => {});
    }
    if (!child || !exit) return Promise.resolve();
    const epoch = c.epoch;
    const stop = (async () => {
      const started = Date.now();
      const deadline = () => Math.min(this.deadline, started + graceSeconds * 1000);
      let gone = false;
      void exit.then(() => (gone = true));
      this.event("Normal", "Killing", `Stopping container ${c.name}`, c);
      const preStop = c.spec.lifecycle?.preStop;
      const hooked = runHook && preStop !== undefined && !this.killed;
      if (hooked) {
        const failure = await this.#runHook(c, preStop!, deadline);
        if (failure) this.event("Warning", "FailedPreStopHook", failure, c);
      }
      if (this.killed || gone) return;
      // In a container SIGTERM reaches PID 1 only; the rest of the group dies when it exits.
      child.kill("SIGTERM");
      // After a preStop hook the kubelet still leaves SIGTERM at least 2 s.
      const hookEnd = Date.now();
      const killAt = () => Math.max(deadline(), hooked ? hookEnd + MIN_GRACE_AFTER_HOOK_MS : 0);
      while (!gone && !this.killed && Date.now() < killAt()) await Promise.race([exit, sleep(Math.min(100, killAt() - Date.now()))]);
      if (!gone) killGroup(child.pid, "SIGKILL");
      await exit;
    })().finally(() => {
      if (c.epoch === epoch) c.stopping = undefined;
    });
    c.stopping = stop;
    return stop;
  }

  /** Runs a lifecycle hook until it finishes or the deadline; returns a failure message or undefined. */
  async #runHook(c: ContainerRunner, handler: V1LifecycleHandler, deadline: () => number): Promise<string | undefined> {
    if (handler.exec?.command?.length) {
      const command = handler.exec.command;
      return new Promise((resolve) => {
        let output = "";
        const child = spawn(command[0]!, command.slice(1), { env: c.env, cwd: this.sandbox, stdio: ["ignore", "pipe", "pipe"], detached: true });
        c.hooks.add(child);
        child.stdout!.on("data", (chunk) => (output += chunk));
        child.stderr!.on("data", (chunk) => (output += chunk));
        const check = setInterval(() => {
          if (Date.now() >= deadline()) killGroup(child.pid, "SIGKILL");
        }, 100);
        const finish = (message: string | undefined) => {
          clearInterval(check);
          c.hooks.delete(child);
          resolve(message);
        };
        const describe = () => `Exec lifecycle hook ([${command.map((w) => (w.length > 40 ? `${w.slice(0, 37)}...` : w)).join(" ")}]) for Container "${c.name}" in Pod "${this.label}" failed`;
        child.once("error", (error) => finish(`${describe()} - error: ${error.message}`));
        child.once("exit", (code, signal) => {
          killGroup(child.pid, "SIGKILL");
          finish(code === 0 ? undefined : `${describe()} - error: command exited with ${code ?? signal}: ${output.trim().slice(-512)}`);
        });
      });
    }
    if (handler.httpGet) {
      const port = typeof handler.httpGet.port === "number" ? handler.httpGet.port : Number((c.spec.ports ?? []).find((p) => p.name === handler.httpGet!.port)?.containerPort ?? handler.httpGet.port);
      return new Promise((resolve) => {
        const req = request({ host: handler.httpGet!.host || this.ip, port, path: handler.httpGet!.path ?? "/", timeout: Math.max(0, deadline() - Date.now()) }, (res) => {
          res.resume();
          resolve(res.statusCode && res.statusCode < 400 ? undefined : `HTTP lifecycle hook (${handler.httpGet!.path}) for Container "${c.name}" in Pod "${this.label}" failed - error: HTTP ${res.statusCode}`);
        });
        req.on("timeout", () => req.destroy(new Error("timeout")));
        req.on("error", (error) => resolve(`HTTP lifecycle hook (${handler.httpGet!.path}) for Container "${c.name}" in Pod "${this.label}" failed - error: ${error.message}`));
        req.end();
      });
    }
    return undefined;
  }

  /** Stops every container as a delete does (preStop, SIGTERM, SIGKILL at the deadline); nothing restarts. */
  async shutdown(graceSeconds: number): Promise<void> {
    this.terminating = true;
    this.deadline = Math.min(this.deadline, Date.now() + graceSeconds * 1000);
    this.abort.abort();
    await Promise.all(this.containers.map((c) => this.stopContainer(c, graceSeconds, true)));
    await this.#done;
  }

  /** Graceful termination after a delete: every container stops, then the pod object goes. */
  async #terminate(): Promise<void> {
    await this.shutdown(this.pod.metadata.deletionGracePeriodSeconds ?? this.spec.terminationGracePeriodSeconds ?? 30);
    if (this.killed) return;
    await this.flushStatus();
    this.#release();
    const current = this.kubelet.options.cluster.pod(this.namespace, this.name);
    if (current?.metadata.uid === this.uid) await this.kubelet.options.cluster.removePod(current);
    this.kubelet.forget(this.uid);
  }

  /** No grace, no preStop: every process group of the pod gets SIGKILL now. */
  kill(): Promise<void> {
    this.killed = true;
    this.terminating = true;
    this.abort.abort();
    this.#killSignal.abort();
    for (const c of this.containers) {
      c.endNoProcess?.();
      killGroup(c.child?.pid, "SIGKILL");
      for (const hook of c.hooks) killGroup(hook.pid, "SIGKILL");
    }
    const exits = this.containers.map((c) => c.exit ?? Promise.resolve());
    return Promise.all(exits).then(() => this.#release());
  }

  #release(): void {
    if (this.ip) this.kubelet.options.addresses.release(this.ip);
    if (this.sandbox) rmSync(this.sandbox, { recursive: true, force: true });
    for (const c of this.containers) c.logs?.close();
  }

  readLogs(request: PodLogRequest): { text: string; follow?(onText: (text: string) => void, onEnd: () => void): () => void } {
    const names = this.containers.map((c) => c.name);
    if (!request.container && names.length > 1) {
      throw new ApiError(400, "BadRequest", `a container name must be specified for pod ${this.name}, choose one of: [${names.join(" ")}]`);
    }
    const c = request.container ? this.containers.find((x) => x.name === request.container) : this.containers[0];
    if (!c) throw new ApiError(400, "BadRequest", `container ${request.container} is not valid for pod ${this.name}`);
    // A container waiting to restart shows the run that just ended, as `kubectl logs` does.
    const waitingAfterRun = c.state.waiting !== undefined && c.lastState.terminated !== undefined;
    const buffer = request.previous ? (waitingAfterRun ? c.logs : c.previousLogs) : c.logs;
    if (!buffer || (request.previous && !waitingAfterRun && !c.previousLogs)) {
      if (request.previous) throw new ApiError(400, "BadRequest", `previous terminated container "${c.name}" in pod "${this.name}" not found`);
      const reason = c.state.waiting?.reason ?? "ContainerCreating";
      const why = reason === "ErrImagePull" ? "trying and failing to pull image" : reason === "ImagePullBackOff" ? "image can't be pulled" : reason;
      throw new ApiError(400, "BadRequest", `container "${c.name}" in pod "${this.name}" is waiting to start: ${why}`);
    }
    return {
      text: buffer.read(request),
      follow: (onText, onEnd) => buffer.follow(onText, onEnd),
    };
  }
}

const SIGNALS: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGABRT: 6, SIGKILL: 9, SIGSEGV: 11, SIGPIPE: 13, SIGTERM: 15 };

function dataOf(object: KubeObject, secret: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries((object.data ?? {}) as Record<string, string>)) out[key] = secret ? Buffer.from(value, "base64").toString("utf8") : value;
  if (!secret) for (const [key, value] of Object.entries((object.binaryData ?? {}) as Record<string, string>)) out[key] = Buffer.from(value, "base64").toString("utf8");
  return out;
}

export class Kubelet implements PodLogSource {
  readonly #workers = new Map<string, PodWorker>();
  readonly #queue: WorkQueue;
  #unsubscribe?: () => void;
  readonly hostIP: string;

  constructor(readonly options: KubeletOptions) {
    this.hostIP = options.hostIP ?? "127.0.0.1";
    this.#queue = new WorkQueue((key) => this.#sync(key), "kubelet");
  }

  start(): void {
    const nodes = new Set(this.options.nodes.map((n) => n.name));
    this.#unsubscribe = this.options.cluster.watchPods(nodes, (pod) => {
      if (!nodes.has((pod.spec as Dict)?.nodeName) && !this.#workers.has(pod.metadata.uid!)) return;
      this.#queue.add(`${pod.metadata.namespace}/${pod.metadata.name}/${pod.metadata.uid}`);
    });
  }

  async #sync(key: string): Promise<void> {
    const [namespace, name, uid] = key.split("/") as [string, string, string];
    const pod = this.options.cluster.pod(namespace, name);
    const worker = this.#workers.get(uid);
    if (!pod || pod.metadata.uid !== uid) {
      // Removed (force delete, or our own removal after termination): nothing may keep running.
      if (worker) {
        this.#workers.delete(uid);
        await worker.kill();
      }
      return;
    }
    if (worker) return worker.sync(pod);
    const phase = (pod.status as Dict | undefined)?.phase;
    if (phase === "Succeeded" || phase === "Failed") return;
    const fresh = new PodWorker(this, pod);
    this.#workers.set(uid, fresh);
    fresh.sync(pod);
  }

  forget(uid: string): void {
    this.#workers.delete(uid);
  }

  read(pod: KubeObject, request: PodLogRequest) {
    const worker = this.#workers.get(pod.metadata.uid!);
    if (!worker) {
      if (!(pod.spec as Dict).nodeName) throw new ApiError(400, "BadRequest", `pod ${pod.metadata.name} does not have a host assigned`);
      throw new ApiError(400, "BadRequest", `container "${(pod.spec as Dict).containers[0].name}" in pod "${pod.metadata.name}" is waiting to start: ContainerCreating`);
    }
    return worker.readLogs(request);
  }

  /** Process ids of every running pod process (tests check none is left). */
  pids(): number[] {
    return [...this.#workers.values()].flatMap((w) => w.containers.flatMap((c) => [c.child?.pid, ...[...c.hooks].map((h) => h.pid)])).filter((p): p is number => p !== undefined);
  }

  /**
   * now: SIGKILL every pod process group at once (no preStop, no grace). Otherwise each pod
   * terminates as on a delete (preStop, SIGTERM, grace), without removing the pod objects.
   */
  async stop(options: { now?: boolean } = {}): Promise<void> {
    this.#unsubscribe?.();
    this.#queue.close();
    const workers = [...this.#workers.values()];
    if (!options.now) await Promise.all(workers.map((worker) => worker.shutdown(worker.spec.terminationGracePeriodSeconds ?? 30)));
    await Promise.all(workers.map((worker) => worker.kill()));
    this.#workers.clear();
  }
}
