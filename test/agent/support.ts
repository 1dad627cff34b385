// Builders for the agent's pure tests: a render input and observed pods in given states, and
// the router's objects as the cluster would hold them.
import type { V1ConfigMap, V1Deployment, V1Pod, V1Role, V1RoleBinding, V1Secret, V1Service, V1ServiceAccount } from "@kubernetes/client-node";
import {
  renderDeploymentPolicies,
  renderInstancePods,
  renderMemberPod,
  renderNamespace,
  renderNamespacePolicies,
  renderRoleService,
  renderRouterObjects,
  type RenderInput,
  type RouterObject,
} from "../../k8s/render/index.ts";
import { applySpecDefaults, type DeploymentSpecInput } from "../../src/domain/deployment-spec.ts";
import { emptyObserved, type Observed } from "../../src/agent/observe.ts";
import { computeStatus, endpointOf, type StatusInput } from "../../src/agent/status.ts";

export const aggregated = (replicas: number, overrides: Partial<DeploymentSpecInput> = {}): RenderInput => ({
  deployment: {
    id: "dep_0123456789abcdefghjk",
    name: "chat",
    projectName: "team",
    generation: 1,
    spec: applySpecDefaults({
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "main", replicas, resources: { gpus: 1 } }],
      ...overrides,
    }),
  },
  options: { routerImage: "ghcr.io/berth/berth:0.1.0" },
});

/** A prefill/decode deployment with the builtin router. */
export const disaggregated = (engine: "vllm" | "sglang", prefill: number, decode: number): RenderInput =>
  aggregated(0, {
    engine: engine === "vllm" ? { name: "vllm", image: "vllm/vllm-openai:v0.11.0" } : { name: "sglang", image: "lmsysorg/sglang:v0.5.4" },
    router: { kind: "builtin" },
    roles: [
      { name: "prefill", kind: "prefill", replicas: prefill, resources: { gpus: 1 } },
      { name: "decode", kind: "decode", replicas: decode, resources: { gpus: 1 } },
    ],
  });

export type PodState = "ready" | "starting" | "terminating" | "stale" | "unschedulable" | "imagepull" | "crashloop";

/** The observed pod of instance `replica` in a state; `stale` carries another spec hash. */
export function observedPod(input: RenderInput, replica: number, state: PodState = "ready", role = "main"): V1Pod {
  const pod = structuredClone(renderInstancePods(input, role, replica)[0]!);
  pod.metadata!.uid = role === "main" ? `uid-${replica}` : `uid-${role}-${replica}`;
  const readyCondition = { type: "Ready", status: state === "ready" || state === "stale" ? "True" : "False" };
  const ip = `127.0.${role === "main" ? 1 : role === "prefill" ? 2 : 3}.${replica + 1}`;
  pod.status = { phase: "Running", podIP: ip, conditions: [readyCondition] };
  pod.spec = { ...pod.spec!, nodeName: "gpu-a" };
  if (state === "stale") pod.metadata!.labels!["berth.dev/spec-hash"] = "0000000000000000";
  if (state === "terminating") pod.metadata!.deletionTimestamp = new Date("2026-01-01T00:00:00Z");
  if (state === "unschedulable") {
    delete pod.spec!.nodeName;
    pod.status = {
      phase: "Pending",
      conditions: [
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        },
      ],
    };
  }
  if (state === "imagepull") {
    pod.status.containerStatuses = [
      { name: "engine", image: "x", imageID: "", ready: false, restartCount: 0, state: { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } } },
    ];
  }
  if (state === "crashloop") {
    pod.status.containerStatuses = [
      {
        name: "engine",
        image: "x",
        imageID: "",
        ready: false,
        restartCount: 3,
        state: { waiting: { reason: "CrashLoopBackOff" } },
        lastState: { terminated: { exitCode: 1, message: "loading\nCUDA out of memory" } },
      },
    ];
  }
  return pod;
}

/** `states[i]` is replica i's pod of `role`; null leaves that replica missing. */
export function observed(
  input: RenderInput,
  states: Array<PodState | null>,
  options: { clusterIP?: string; namespace?: boolean; role?: string } = {},
): Observed {
  const role = options.role ?? "main";
  const service: V1Service = structuredClone(renderRoleService(input, role));
  service.metadata!.uid = `uid-svc-${role}`;
  service.spec!.clusterIP = options.clusterIP ?? "127.0.200.7";
  const exists = options.namespace ?? true;
  return {
    ...emptyObserved(exists),
    // An existing namespace is converged on isolation: its Pod Security labels and every policy present.
    ...(exists && {
      namespaceLabels: { ...renderNamespace(input.deployment.projectName).metadata!.labels! },
      namespacePolicies: renderNamespacePolicies(input.deployment.projectName).map((p) => p.metadata!.name!),
      networkPolicies: renderDeploymentPolicies(input).map((p) => ({ ...p, metadata: { ...p.metadata!, uid: `uid-netpol-${p.metadata!.name}` } })),
    }),
    pods: states.flatMap((state, replica) => (state ? [observedPod(input, replica, state, role)] : [])),
    services: options.namespace === false ? [] : [service],
  };
}

/** Two observations of the same deployment as one (e.g. a prefill and a decode role). */
export function merged(a: Observed, b: Observed): Observed {
  return {
    namespaceExists: a.namespaceExists && b.namespaceExists,
    namespaceLabels: { ...a.namespaceLabels, ...b.namespaceLabels },
    namespacePolicies: [...new Set([...a.namespacePolicies, ...b.namespacePolicies])],
    // Both observations are of one deployment: its policies once.
    networkPolicies: [...a.networkPolicies, ...b.networkPolicies.filter((p) => !a.networkPolicies.some((q) => q.metadata?.name === p.metadata?.name))],
    pods: [...a.pods, ...b.pods],
    services: [...a.services, ...b.services],
    routerPods: [...a.routerPods, ...b.routerPods],
    deployments: [...a.deployments, ...b.deployments],
    configMaps: [...a.configMaps, ...b.configMaps],
    secrets: [...a.secrets, ...b.secrets],
    serviceAccounts: [...a.serviceAccounts, ...b.serviceAccounts],
    roles: [...a.roles, ...b.roles],
    roleBindings: [...a.roleBindings, ...b.roleBindings],
    claims: [...a.claims, ...b.claims],
  };
}

export interface RouterState {
  /** Ready replicas the router Deployment reports (default: its declared count). */
  readyReplicas?: number;
  /** States of the router pods (default: one ready pod). */
  pods?: Array<"ready" | "starting" | "terminating">;
  /** The admin-token Secret exists (default true). */
  secret?: boolean;
  /** The observed Deployment carries another spec hash. */
  drifted?: boolean;
  /** The router Service's ClusterIP (default 127.0.200.9). */
  clusterIP?: string;
}

export const ROUTER_TOKEN = "router-admin-token-0123456789";

/** `base` plus the router's objects as applied and running. */
export function withRouter(input: RenderInput, base: Observed, state: RouterState = {}): Observed {
  const objects = renderRouterObjects(input).map((o) => structuredClone(o) as RouterObject);
  const out = { ...base, services: [...base.services], deployments: [...base.deployments], configMaps: [...base.configMaps] };
  for (const object of objects) {
    object.metadata!.uid = `uid-${object.kind!.toLowerCase()}`;
    switch (object.kind) {
      case "ConfigMap":
        out.configMaps.push(object as V1ConfigMap);
        break;
      case "Service":
        (object as V1Service).spec!.clusterIP = state.clusterIP ?? "127.0.200.9";
        out.services.push(object as V1Service);
        break;
      case "Deployment": {
        const deployment = object as V1Deployment;
        if (state.drifted) deployment.metadata!.labels!["berth.dev/spec-hash"] = "0000000000000000";
        const replicas = deployment.spec!.replicas!;
        deployment.status = { replicas, readyReplicas: state.readyReplicas ?? replicas };
        out.deployments.push(deployment);
        break;
      }
      case "ServiceAccount":
        out.serviceAccounts = [...base.serviceAccounts, object as V1ServiceAccount];
        break;
      case "Role":
        out.roles = [...base.roles, object as V1Role];
        break;
      case "RoleBinding":
        out.roleBindings = [...base.roleBindings, object as V1RoleBinding];
        break;
    }
  }
  const deployment = out.deployments.find((d) => d.metadata?.labels?.["berth.dev/component"] === "router");
  out.routerPods = (state.pods ?? ["ready"]).map((podState, i) => routerPod(deployment!, i, podState));
  if ((state.secret ?? true) && input.deployment.spec.router?.kind === "builtin") {
    const secret: V1Secret = {
      metadata: {
        name: `${input.deployment.name}-router-admin`,
        namespace: `berth-${input.deployment.projectName}`,
        uid: "uid-secret",
        labels: { "app.kubernetes.io/managed-by": "berth-agent", "berth.dev/deployment-id": input.deployment.id },
      },
      data: { token: Buffer.from(ROUTER_TOKEN).toString("base64") },
    };
    out.secrets = [...base.secrets, secret];
  }
  return out;
}

function routerPod(deployment: V1Deployment, index: number, state: "ready" | "starting" | "terminating"): V1Pod {
  return {
    metadata: {
      name: `${deployment.metadata!.name}-abc-${index}`,
      namespace: deployment.metadata!.namespace,
      uid: `uid-router-${index}`,
      labels: { ...deployment.spec!.template.metadata!.labels },
      ...(state === "terminating" ? { deletionTimestamp: new Date("2026-01-01T00:00:00Z") } : {}),
    },
    spec: deployment.spec!.template.spec!,
    status: {
      phase: "Running",
      podIP: `127.0.9.${index + 1}`,
      conditions: [{ type: "Ready", status: state === "starting" ? "False" : "True" }],
      containerStatuses: [{ name: "router", image: "x", imageID: "", ready: state !== "starting", restartCount: 0 }],
    },
  };
}

/** TP16 over two 8-GPU pods (vLLM --nnodes 2), `replicas` instances. */
export const tp16 = (replicas = 1, engine: "vllm" | "sglang" = "vllm"): RenderInput =>
  aggregated(replicas, {
    ...(engine === "sglang" && { engine: { name: "sglang", image: "lmsysorg/sglang:v0.5.4" } }),
    roles: [{ name: "main", replicas, size: 2, resources: { gpus: 8, gpuType: "nvidia-h100-80gb" } }],
  });

export type MemberState = "ready" | "starting" | "pending" | "unschedulable" | "terminating" | "failed" | "crashloop" | "restarted" | "stale";

/** Member `member` of instance `replica` as observed, bound to node `gpu-<member>` once scheduled. */
export function memberPod(input: RenderInput, replica: number, member: number, state: MemberState = "ready"): V1Pod {
  const pod = structuredClone(renderMemberPod(input, "main", replica, member));
  pod.metadata!.uid = `uid-${replica}-${member}`;
  pod.metadata!.namespace = "berth-team";
  const running = { name: "engine", image: "x", imageID: "", ready: state === "ready", restartCount: 0, state: { running: { startedAt: new Date(0) } } };
  pod.spec!.nodeName = `gpu-${member}`;
  pod.status = {
    phase: "Running",
    podIP: `127.0.1.${10 * replica + member + 1}`,
    conditions: [{ type: "Ready", status: state === "ready" || state === "stale" ? "True" : "False" }],
    containerStatuses: [running],
  };
  if (state === "stale") pod.metadata!.labels!["berth.dev/spec-hash"] = "0000000000000000";
  if (state === "terminating") pod.metadata!.deletionTimestamp = new Date("2026-01-01T00:00:00Z");
  if (state === "pending" || state === "unschedulable") {
    delete pod.spec!.nodeName;
    pod.status = { phase: "Pending", conditions: [] };
    if (state === "unschedulable") {
      pod.status.conditions = [
        { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu." },
      ];
    }
  }
  if (state === "failed") pod.status.phase = "Failed";
  if (state === "crashloop") pod.status.containerStatuses = [{ ...running, restartCount: 2, state: { waiting: { reason: "CrashLoopBackOff" } } }];
  if (state === "restarted") pod.status.containerStatuses = [{ ...running, restartCount: 1, lastState: { terminated: { exitCode: 137 } } }];
  return pod;
}

/** One instance's members in the given states (null: that member is missing). */
export const groupPods = (input: RenderInput, replica: number, states: Array<MemberState | null>) =>
  states.flatMap((state, member) => (state ? [memberPod(input, replica, member, state)] : []));

/**
 * computeStatus as the agent calls it once the endpoint answered its check (endpoint-check.ts):
 * for tests about everything else Ready depends on. An explicit `endpointCheck` is kept.
 */
export function statusAnswered(input: StatusInput) {
  const endpoint = input.observed ? endpointOf(input.render, input.observed) : undefined;
  const endpointCheck = input.endpointCheck ?? (endpoint ? { endpoint, answered: true, misses: 0, detail: "answered 200" } : undefined);
  return computeStatus({ ...input, ...(endpointCheck && { endpointCheck }) });
}
