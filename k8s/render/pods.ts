// Engine pods: one per instance member, named `<deployment>-<role>-r<replica>-m<member>`.
// The agent creates pods directly (never through a controller) so it chooses which replica
// retires and adds elastic ranks one at a time; hence rendering takes the replica index and
// member as input and knows nothing of how many instances exist. Pods are create-only: the
// agent compares `berth.dev/spec-hash` with the current one and replaces a stale pod, it
// never re-applies a running pod (a pod's spec is immutable).
import type { V1Container, V1EnvVar, V1Pod, V1Probe, V1Toleration, V1Volume, V1VolumeMount } from "@kubernetes/client-node";
import type { DeploymentSpec, Role } from "../../src/domain/deployment-spec.ts";
import { appendExtraArgs, mergeEnv } from "./args.ts";
import { drainHook } from "./drain-hook.ts";
import { everyMemberServes, httpPort, podIpEnv, type EngineContext, type EnginePlan } from "./engine.ts";
import { renderSglang } from "./engine-sglang.ts";
import { renderVllm } from "./engine-vllm.ts";
import {
  ANNOTATIONS,
  CONTAINER_SECURITY,
  GPU_TYPE_LABEL,
  instanceServiceName,
  isGroup,
  LABELS,
  MANAGED_BY,
  memberHost,
  membersOf,
  namespaceName,
  podName,
  POD_SECURITY,
  resolveOptions,
} from "./names.ts";
import { specHashOf } from "./spec-hash.ts";
import type { RenderInput, ResolvedOptions } from "./types.ts";

/** Where a PersistentVolumeClaim source is mounted (read-only). */
export const MODEL_MOUNT_PATH = "/models";

export function findRole(spec: DeploymentSpec, roleName: string): Role {
  const role = spec.roles.find((r) => r.name === roleName);
  if (!role) throw new Error(`role "${roleName}" is not in the spec (roles: ${spec.roles.map((r) => r.name).join(", ")})`);
  return role;
}

/** `nvidia.com/gpu`, or `amd.com/gpu` for an `amd-*` GPU type. */
export function gpuResourceName(role: Role): string {
  return role.resources.gpuType?.startsWith("amd-") ? "amd.com/gpu" : "nvidia.com/gpu";
}

function modelArgument(spec: DeploymentSpec): string {
  const source = spec.model.source;
  if ("huggingFace" in source) return source.huggingFace.repository;
  if ("pvc" in source) {
    const path = (source.pvc.path ?? "").replace(/^\/+|\/+$/g, "");
    return path === "" ? MODEL_MOUNT_PATH : `${MODEL_MOUNT_PATH}/${path}`;
  }
  return source.uri;
}

/** Labels common to a role's objects (pods add replica, member, serving). */
export function roleLabels(input: RenderInput, role: Role, hash: string): Record<string, string> {
  const { deployment } = input;
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.deployment]: deployment.name,
    [LABELS.deploymentId]: deployment.id,
    [LABELS.role]: role.name,
    [LABELS.roleKind]: role.kind,
    [LABELS.specHash]: hash,
  };
}

function probes(plan: EnginePlan, engine: DeploymentSpec["engine"]["name"]): Pick<V1Container, "startupProbe" | "readinessProbe" | "livenessProbe"> {
  // SGLang's /health generates a token and sleeps 1 s before its first check (up to 20 s under
  // load): a 1 s timeout would fail a healthy server. vLLM's /health answers at once.
  const timeoutSeconds = engine === "sglang" ? 10 : 5;
  const health = (rest: V1Probe): V1Probe => ({ httpGet: { path: "/health", port: "http" }, timeoutSeconds, ...rest });
  const tcp = plan.steadyProbe === "tcp";
  const connect = (rest: V1Probe): V1Probe => ({ tcpSocket: { port: "http" }, timeoutSeconds: 5, ...rest });
  return {
    // Weights download and load, CUDA graphs compile: allow 30 minutes before liveness takes over,
    // polled every 2 s: a new replica is on the autoscaler's critical path, and a 10 s period
    // would add 5 s on average between the engine answering and the replica taking traffic.
    startupProbe: health({ periodSeconds: 2, failureThreshold: 900 }),
    readinessProbe: (tcp ? connect : health)({ periodSeconds: 10, failureThreshold: 3, successThreshold: 1 }),
    livenessProbe: tcp ? connect({ periodSeconds: 30, failureThreshold: 3 }) : health({ periodSeconds: 30, failureThreshold: engine === "sglang" ? 5 : 3 }),
  };
}

/** A take-over role runs the user's command as is: berth adds no flags, probes or drain hook. */
function takeOverPlan(ctx: EngineContext): EnginePlan {
  return {
    command: [...ctx.role.command],
    args: [],
    acceptsExtraArgs: false,
    env: [],
    defaultEnv: [],
    ports: [httpPort(ctx)],
    serves: ctx.member === 0 || everyMemberServes(ctx.role),
    steadyProbe: "http",
    annotations: { [ANNOTATIONS.unmanaged]: "true" },
    volumes: [],
  };
}

function groupEnv(input: RenderInput, role: Role, replica: number, member: number, ns: string, options: ResolvedOptions): V1EnvVar[] {
  if (!isGroup(role)) return [];
  const leader = memberHost(input.deployment.name, role.name, replica, 0, ns, options.clusterDomain);
  return [
    { name: "BERTH_LEADER_ADDRESS", value: leader },
    // An elastic instance's size changes live (its width); its ranks need only the leader and their own rank.
    ...(role.elastic ? [] : [{ name: "BERTH_GROUP_SIZE", value: String(role.size) }]),
    { name: "BERTH_MEMBER_INDEX", value: String(member) },
  ];
}

function checkIndices(role: Role, replica: number, member: number): void {
  if (!Number.isInteger(replica) || replica < 0) throw new RangeError(`replica must be an integer ≥ 0, got ${replica}`);
  const limit = role.elastic ? Math.max(role.elastic.maxWidth, role.elastic.width) : role.size;
  if (!Number.isInteger(member) || member < 0 || member >= limit) {
    throw new RangeError(`member of role "${role.name}" must be an integer in 0..${limit - 1}, got ${member}`);
  }
}

/**
 * The pod of one member of one instance. For an elastic role, `member` is the DP rank and may
 * reach `maxWidth - 1`, so the agent can add ranks before a resize.
 */
export function renderMemberPod(input: RenderInput, roleName: string, replica: number, member: number): V1Pod {
  const { deployment } = input;
  const { spec } = deployment;
  const role = findRole(spec, roleName);
  checkIndices(role, replica, member);
  const options = resolveOptions(spec, deployment.name, input.options);
  const ns = namespaceName(deployment.projectName);
  const name = podName(deployment.name, role.name, replica, member);
  const hash = specHashOf(spec, role.name, options);
  const managed = role.command.length === 0;
  const ctx: EngineContext = { spec, role, deploymentName: deployment.name, namespace: ns, replica, member, options, model: modelArgument(spec) };
  const plan = !managed ? takeOverPlan(ctx) : spec.engine.name === "vllm" ? renderVllm(ctx) : renderSglang(ctx);

  const args = plan.acceptsExtraArgs ? appendExtraArgs(spec.engine.name, plan.args, role.extraArgs).args : plan.args;
  const owned: V1EnvVar[] = [
    podIpEnv("BERTH_POD_IP"),
    ...groupEnv(input, role, replica, member, ns, options),
    ...(spec.model.hfTokenSecret
      ? [{ name: "HF_TOKEN", valueFrom: { secretKeyRef: { name: spec.model.hfTokenSecret.name, key: spec.model.hfTokenSecret.key } } }]
      : []),
    ...plan.env,
  ];
  const env = mergeEnv(spec.engine.name, owned, plan.defaultEnv, role.env, { takeOver: !managed });

  const volumes: V1Volume[] = [
    { name: "dshm", emptyDir: { medium: "Memory", ...(role.resources.sharedMemory && { sizeLimit: role.resources.sharedMemory }) } },
  ];
  const mounts: V1VolumeMount[] = [{ name: "dshm", mountPath: "/dev/shm" }];
  if ("pvc" in spec.model.source) {
    volumes.push({ name: "model", persistentVolumeClaim: { claimName: spec.model.source.pvc.claimName, readOnly: true } });
    mounts.push({ name: "model", mountPath: MODEL_MOUNT_PATH, readOnly: true });
  }
  for (const extra of plan.volumes) {
    volumes.push(extra.volume);
    mounts.push(extra.mount);
  }

  const gpus = role.resources.gpus;
  const gpuKey = gpuResourceName(role);
  const requests: Record<string, string> = {
    ...(role.resources.cpu && { cpu: role.resources.cpu }),
    ...(role.resources.memory && { memory: role.resources.memory }),
    ...(gpus > 0 && { [gpuKey]: String(gpus) }),
  };
  const limits: Record<string, string> = gpus > 0 ? { [gpuKey]: String(gpus) } : {};

  const container: V1Container = {
    name: "engine",
    image: spec.engine.image,
    imagePullPolicy: "IfNotPresent",
    command: plan.command,
    ...(args.length > 0 && { args }),
    env,
    ports: plan.ports,
    resources: { ...(Object.keys(requests).length > 0 && { requests }), ...(Object.keys(limits).length > 0 && { limits }) },
    volumeMounts: mounts,
    ...(managed && plan.serves ? probes(plan, spec.engine.name) : {}),
    securityContext: structuredClone(CONTAINER_SECURITY),
  };
  const hook = managed && plan.serves ? drainHook(spec.engine.name, options.enginePort, role.terminationGracePeriodSeconds) : undefined;
  if (hook) container.lifecycle = hook;

  const tolerations: V1Toleration[] = gpus > 0 ? [{ key: gpuKey, operator: "Exists", effect: "NoSchedule" }] : [];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: ns,
      labels: {
        ...roleLabels(input, role, hash),
        [LABELS.replica]: String(replica),
        [LABELS.member]: String(member),
        [LABELS.serving]: String(plan.serves),
        ...(!managed && { [LABELS.unmanaged]: "true" }),
      },
      annotations: { [ANNOTATIONS.generation]: String(deployment.generation), ...plan.annotations },
    },
    spec: {
      ...(isGroup(role) && { hostname: name, subdomain: instanceServiceName(deployment.name, role.name, replica) }),
      restartPolicy: "Always",
      terminationGracePeriodSeconds: role.terminationGracePeriodSeconds,
      // Service links would add a variable per Service, e.g. VLLM_PORT for a Service named "vllm",
      // which vLLM reads as its own setting.
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      securityContext: structuredClone(POD_SECURITY),
      ...(role.resources.gpuType && { nodeSelector: { [GPU_TYPE_LABEL]: role.resources.gpuType } }),
      ...(tolerations.length > 0 && { tolerations }),
      containers: [container],
      volumes,
    },
  };
}

/** Every pod of one instance (`size` members, or an elastic role's current width of ranks), leader first. */
export function renderInstancePods(input: RenderInput, roleName: string, replica: number): V1Pod[] {
  const role = findRole(input.deployment.spec, roleName);
  return Array.from({ length: membersOf(role) }, (_, member) => renderMemberPod(input, roleName, replica, member));
}
