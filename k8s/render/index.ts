// The pure Kubernetes renderer: a ModelDeployment's defaulted intent → Kubernetes objects.
// No I/O, no clock, no randomness: equal input, equal output. Nothing here imports db/ or routes/.
export { renderDeployment, renderNamespace } from "./deployment.ts";
export { DEFAULT_EC_CACHE_SIZE, needsEcCache, renderClaims } from "./claims.ts";
export { ecCacheClaimName } from "./engine-vllm.ts";
export { findRole, gpuResourceName, MODEL_MOUNT_PATH, renderInstancePods, renderMemberPod } from "./pods.ts";
export { renderInstanceService, renderRoleService } from "./services.ts";
export { EXTERNAL_POLICIES, renderRouterObjects, routerConfig } from "./router.ts";
export { appendExtraArgs, mergeEnv } from "./args.ts";
export { drainHook, IN_FLIGHT_GAUGES } from "./drain-hook.ts";
export { everyMemberServes } from "./engine.ts";
export {
  BLOCKED_RANGES,
  DEFAULT_AGENT_NAMESPACE,
  DEFAULT_MODEL_EGRESS_CIDR,
  enginePolicyName,
  exceptionsWithin,
  isIpv4Cidr,
  NAMESPACE_POLICY_NAMES,
  renderDeploymentPolicies,
  renderNamespacePolicies,
  resolveIsolation,
  routerPolicyName,
} from "./network-policies.ts";
export { canonicalJson, fnv1a64, RENDER_VERSION, specHashInputs, specHashOf } from "./spec-hash.ts";
export {
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
  POD_SECURITY_LABELS,
  PORTS,
  resolveOptions,
  roleServiceName,
  routerName,
  routerServiceName,
  serviceHost,
} from "./names.ts";
export type { DeploymentToRender, IsolationOptions, RenderedDeployment, RenderInput, RenderOptions, RouterObject, SecretKeyRef } from "./types.ts";
