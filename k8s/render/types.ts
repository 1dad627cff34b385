// The renderer's input (a deployment's defaulted intent plus installation options) and its
// output (typed Kubernetes objects). Types only; the official object types come from
// @kubernetes/client-node and are erased at run time.
import type {
  V1NetworkPolicy,
  V1PersistentVolumeClaim,
  V1ConfigMap,
  V1Deployment,
  V1Namespace,
  V1Pod,
  V1Role,
  V1RoleBinding,
  V1Service,
  V1ServiceAccount,
} from "@kubernetes/client-node";
import type { DeploymentSpec } from "../../src/domain/deployment-spec.ts";

export interface DeploymentToRender {
  /** `dep_…`; goes into the `berth.dev/deployment-id` label and every selector. */
  id: string;
  /** DNS-1035 label; the prefix of every object name. */
  name: string;
  /** The project's name; its namespace is `berth-<projectName>`. */
  projectName: string;
  /** The defaulted spec, as stored (applySpecDefaults). */
  spec: DeploymentSpec;
  /** Spec generation rendered; recorded as a pod annotation, never hashed. */
  generation: number;
}

export interface SecretKeyRef {
  name: string;
  key: string;
}

export interface RenderOptions {
  /** Image of the built-in router; its container runs `berth router`. */
  routerImage: string;
  /** Secret holding the built-in router's admin token; default `<deployment>-router-admin`, key `token`. */
  routerAdminTokenSecret?: SecretKeyRef;
  /** Engine HTTP port; default 8000 for vLLM, 30000 for SGLang. */
  enginePort?: number;
  /** Port every router kind listens on (and its Service exposes); default 8080. */
  routerPort?: number;
  /** Image of `vllm-router` (router kind `vllm-router`). */
  vllmRouterImage?: string;
  /** Image of the Shepherd Model Gateway (router kind `sglang-gateway`). */
  sglangGatewayImage?: string;
  /** DNS suffix of the cluster (`<svc>.<ns>.svc.<clusterDomain>`); default `cluster.local`. */
  clusterDomain?: string;
  /** vLLM EPD's shared encoder-cache claim: storage class (unset: the cluster's default) and size (default 10Gi). */
  ecCache?: { storageClassName?: string; size?: string };
  /** Who may reach a deployment and where its engines may connect (network-policies.ts). */
  isolation?: IsolationOptions;
}

export interface IsolationOptions {
  /** The namespace allowed to reach the router port (the gateway's); unset: any namespace. */
  ingressNamespace?: string;
  /** The agent's namespace: it reaches engines and routers (metrics, admin); default `berth-system`. */
  agentNamespace?: string;
  /** IPv4 block engines may download weights from over TCP 443; default 0.0.0.0/0 minus private and link-local ranges. */
  modelEgressCidr?: string;
}

export interface RenderInput {
  deployment: DeploymentToRender;
  options: RenderOptions;
}

/** RenderOptions with every default filled in. */
export type ResolvedOptions = Required<Omit<RenderOptions, "enginePort" | "ecCache" | "isolation">> & { enginePort: number };

export type RouterObject = V1Deployment | V1Service | V1ConfigMap | V1ServiceAccount | V1Role | V1RoleBinding;

export interface RenderedDeployment {
  namespace: V1Namespace;
  /** Every pod of every instance at the spec's replica counts (elastic roles at their width). */
  pods: V1Pod[];
  /** Role Services (ClusterIP) and per-instance headless Services. */
  services: V1Service[];
  /** Router Deployment, Service, ConfigMap (and discovery RBAC for external routers); empty without a router. */
  routerObjects: RouterObject[];
  /** vLLM EPD: the encoder-cache claim encode and prefill pods mount; empty otherwise. */
  claims: V1PersistentVolumeClaim[];
  /** The namespace's default-deny and DNS policies, then the deployment's own (network-policies.ts). */
  networkPolicies: V1NetworkPolicy[];
}
