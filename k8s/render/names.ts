// Object names, label keys and fixed ports of everything berth renders (docs/design.md §3.3, §5).
// Names are derived, never stored: `<deployment>-<role>-r<replica>-m<member>` for pods,
// `<deployment>-<role>` for role Services, `<deployment>-<role>-r<replica>` for an
// instance's headless Service (the pods' DNS subdomain), `<deployment>` for the router Service.
import type { V1PodSecurityContext, V1SecurityContext } from "@kubernetes/client-node";
import type { DeploymentSpec, EngineName, Role } from "../../src/domain/deployment-spec.ts";
import type { RenderOptions, ResolvedOptions } from "./types.ts";

export const LABELS = {
  managedBy: "app.kubernetes.io/managed-by",
  deployment: "berth.dev/deployment",
  deploymentId: "berth.dev/deployment-id",
  role: "berth.dev/role",
  roleKind: "berth.dev/role-kind",
  replica: "berth.dev/replica",
  member: "berth.dev/member",
  specHash: "berth.dev/spec-hash",
  /** "true" on pods that answer the OpenAI API; Services and router discovery select on it. */
  serving: "berth.dev/serving",
  /** "true" on pods of a role with an explicit `command` (take-over tier). */
  unmanaged: "berth.dev/unmanaged",
  /** `router` on the router's objects (they belong to no role). */
  component: "berth.dev/component",
  project: "berth.dev/project",
} as const;

export const MANAGED_BY = "berth-agent";

/**
 * Pod Security Admission on every project namespace (docs/decisions/0063): `baseline` enforced
 * (engines run as root, as the vLLM and SGLang images do, so `restricted` would refuse them),
 * `restricted` warned and audited so the remaining gap stays visible.
 */
export const POD_SECURITY_LABELS: Readonly<Record<string, string>> = {
  "pod-security.kubernetes.io/enforce": "baseline",
  "pod-security.kubernetes.io/enforce-version": "latest",
  "pod-security.kubernetes.io/warn": "restricted",
  "pod-security.kubernetes.io/warn-version": "latest",
  "pod-security.kubernetes.io/audit": "restricted",
  "pod-security.kubernetes.io/audit-version": "latest",
};

/** Node label carrying a node's GPU type id (`nvidia-h100-80gb`, …); the simulated cluster sets it too. */
export const GPU_TYPE_LABEL = "berth.dev/gpu-type";

export const ANNOTATIONS = {
  generation: "berth.dev/generation",
  unmanaged: "berth.dev/unmanaged",
  routerConfigHash: "berth.dev/router-config-hash",
  /**
   * On an elastic leader: the DP width its engine runs at — the width it was started with, then
   * each width the agent proved after a resize. The agent's record of the engine, kept with it.
   */
  elasticWidth: "berth.dev/elastic-width",
  /** SMG reads a prefill pod's bootstrap port from this annotation when discovering workers. */
  sglangBootstrapPort: "sglang.ai/bootstrap-port",
} as const;

/** Fixed in-pod ports berth wires (none is user-configurable; all are owned flags or env). */
export const PORTS = {
  vllmDataParallelRpc: 29550, // --data-parallel-rpc-port (vLLM's default)
  vllmMaster: 29501, // --master-port (multi-node TP/PP, vLLM's default)
  vllmNixlSideChannel: 5600, // VLLM_NIXL_SIDE_CHANNEL_PORT (vLLM's default)
  sglangDistInit: 20000, // --dist-init-addr <leader>:20000
  sglangBootstrap: 8998, // --disaggregation-bootstrap-port (SGLang's default)
  rayGcs: 6379, // ray start --head --port
} as const;

export const DEFAULT_ENGINE_PORT: Readonly<Record<EngineName, number>> = { vllm: 8000, sglang: 30000 };
export const DEFAULT_ROUTER_PORT = 8080;
export const DEFAULT_CLUSTER_DOMAIN = "cluster.local";
export const DEFAULT_VLLM_ROUTER_IMAGE = "vllm/vllm-router:v0.1.17";
export const DEFAULT_SGLANG_GATEWAY_IMAGE = "lightseekorg/smg:v1.13.0";

export function resolveOptions(spec: DeploymentSpec, deploymentName: string, options: RenderOptions): ResolvedOptions {
  return {
    routerImage: options.routerImage,
    routerAdminTokenSecret: options.routerAdminTokenSecret ?? { name: `${deploymentName}-router-admin`, key: "token" },
    enginePort: options.enginePort ?? DEFAULT_ENGINE_PORT[spec.engine.name],
    routerPort: options.routerPort ?? DEFAULT_ROUTER_PORT,
    vllmRouterImage: options.vllmRouterImage ?? DEFAULT_VLLM_ROUTER_IMAGE,
    sglangGatewayImage: options.sglangGatewayImage ?? DEFAULT_SGLANG_GATEWAY_IMAGE,
    clusterDomain: options.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN,
  };
}

/**
 * Every container berth renders (engines, take-over roles, routers): no privilege escalation and no
 * Linux capability (vLLM, SGLang and the routers bind ports above 1024 and need none); pods add
 * the runtime's default seccomp profile. Both are what `restricted` asks besides a non-root user.
 */
export const CONTAINER_SECURITY: Readonly<V1SecurityContext> = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } };
export const POD_SECURITY: Readonly<V1PodSecurityContext> = { seccompProfile: { type: "RuntimeDefault" } };

export const namespaceName = (projectName: string) => `berth-${projectName}`;
export const podName = (deployment: string, role: string, replica: number, member: number) =>
  `${deployment}-${role}-r${replica}-m${member}`;
export const instanceServiceName = (deployment: string, role: string, replica: number) => `${deployment}-${role}-r${replica}`;
export const roleServiceName = (deployment: string, role: string) => `${deployment}-${role}`;
export const routerName = (deployment: string) => `${deployment}-router`;
/** The router Service carries the deployment's own name: it is the deployment's front door. */
export const routerServiceName = (deployment: string) => deployment;

/** `<service>.<namespace>.svc.<domain>`. */
export const serviceHost = (service: string, namespace: string, domain: string) => `${service}.${namespace}.svc.${domain}`;

/** A group member's stable DNS name through its instance's headless Service (hostname + subdomain). */
export const memberHost = (deployment: string, role: string, replica: number, member: number, namespace: string, domain: string) =>
  `${podName(deployment, role, replica, member)}.${serviceHost(instanceServiceName(deployment, role, replica), namespace, domain)}`;

/**
 * Pods per instance: an elastic role runs one pod per DP rank (its current width), any other
 * role `size` pods (leader m0 plus workers).
 */
export function membersOf(role: Role): number {
  return role.elastic ? role.elastic.width : role.size;
}

/** Whether the role's instances are groups of pods that must find their leader (headless Service, BERTH_LEADER_ADDRESS). */
export function isGroup(role: Role): boolean {
  return role.elastic !== undefined || role.size > 1;
}
