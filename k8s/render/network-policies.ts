// NetworkPolicies (docs/design.md §13.5, docs/decisions/0063): a project namespace denies all
// ingress and egress but DNS; each deployment then opens exactly its own paths, selected by its
// `berth.dev/deployment-id`, so no pod reaches another deployment's side ports (Ray GCS 6379,
// torch rendezvous, NIXL side channel, SGLang bootstrap), in this namespace or any other.
//   engines ← the deployment's own pods (every port); ← the agent's namespace (engine port);
//           ← the ingress source (engine port) only when there is no router (the role Service is the door)
//   engines → the deployment's own pods (every port); → the model-download block (TCP 443)
//   router  ← the ingress source and the agent's namespace (router port)
//   router  → the deployment's own pods (every port); external routers → the Kubernetes API (TCP 443, 6443)
// Policies are additive: the namespace's two apply to every pod, a deployment's to its pods only.
import type { V1LabelSelector, V1NetworkPolicy, V1NetworkPolicyPeer, V1NetworkPolicyPort, V1NetworkPolicySpec } from "@kubernetes/client-node";
import { LABELS, MANAGED_BY, namespaceName, resolveOptions, routerName } from "./names.ts";
import { canonicalJson, fnv1a64 } from "./spec-hash.ts";
import type { IsolationOptions, RenderInput } from "./types.ts";

export const DEFAULT_AGENT_NAMESPACE = "berth-system";
/** Where engines may download weights from by default: anywhere public (see BLOCKED_RANGES). */
export const DEFAULT_MODEL_EGRESS_CIDR = "0.0.0.0/0";
/**
 * Never a model source unless the installation names such a range itself: link-local (the cloud
 * metadata address 169.254.169.254 lives there), the RFC 1918 private ranges and carrier-grade NAT
 * (where clusters put pod, Service and node addresses), so engines cannot dial other tenants or
 * the nodes through the model-download rule.
 */
export const BLOCKED_RANGES = ["10.0.0.0/8", "100.64.0.0/10", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"] as const;

export const NAMESPACE_POLICY_NAMES = { defaultDeny: "berth-default-deny", dns: "berth-allow-dns" } as const;
export const enginePolicyName = (deployment: string) => `${deployment}-engines`;
export const routerPolicyName = (deployment: string) => routerName(deployment);

const NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name";

function parseCidr(cidr: string): { base: number; bits: number } | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const bits = Number(match[5]);
  if (octets.some((o) => o > 255) || bits > 32) return undefined;
  const address = octets.reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - bits);
  return { base: address - (address % size), bits };
}

/** Whether `cidr` is an IPv4 block `a.b.c.d/n` (the agent's --model-egress-cidr is checked with it). */
export const isIpv4Cidr = (cidr: string): boolean => parseCidr(cidr) !== undefined;

/**
 * The blocked ranges strictly inside `cidr`: a NetworkPolicy's `except` must lie within its
 * `cidr`, and a block the installation chose on purpose (an in-cluster mirror at 10.20.0.0/16)
 * must not be cut out of itself.
 */
export function exceptionsWithin(cidr: string): string[] {
  const outer = parseCidr(cidr);
  if (!outer) throw new RangeError(`model egress must be an IPv4 CIDR such as 0.0.0.0/0 or 10.20.0.0/16, got "${cidr}"`);
  return BLOCKED_RANGES.filter((range) => {
    const inner = parseCidr(range)!;
    const size = 2 ** (32 - outer.bits);
    return inner.bits > outer.bits && inner.base >= outer.base && inner.base < outer.base + size;
  });
}

/**
 * An ingress rule in the API's JSON shape (`from`). client-node's type calls that field `_from`
 * and its serializer renames it; apply.ts converts before sending (toClientShape there).
 */
interface IngressRule {
  from: V1NetworkPolicyPeer[];
  ports?: V1NetworkPolicyPort[];
}
type PolicySpec = Omit<V1NetworkPolicySpec, "ingress"> & { ingress?: IngressRule[] };
const asPolicySpec = (spec: PolicySpec) => spec as unknown as V1NetworkPolicySpec;

export interface ResolvedIsolation {
  ingressNamespace?: string;
  agentNamespace: string;
  modelEgressCidr: string;
}

export function resolveIsolation(options: IsolationOptions | undefined): ResolvedIsolation {
  return {
    ...(options?.ingressNamespace && { ingressNamespace: options.ingressNamespace }),
    agentNamespace: options?.agentNamespace ?? DEFAULT_AGENT_NAMESPACE,
    modelEgressCidr: options?.modelEgressCidr ?? DEFAULT_MODEL_EGRESS_CIDR,
  };
}

const namespacePeer = (name: string): V1NetworkPolicyPeer => ({ namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: name } } });
/** Unset: any namespace may reach the deployment's front door (only its side ports stay closed). */
const ingressPeer = (isolation: ResolvedIsolation): V1NetworkPolicyPeer =>
  isolation.ingressNamespace ? namespacePeer(isolation.ingressNamespace) : { namespaceSelector: {} };
const tcp = (port: number): V1NetworkPolicyPort => ({ protocol: "TCP", port });

/** The project namespace's own policies: deny everything, then allow DNS to kube-dns. */
export function renderNamespacePolicies(projectName: string): V1NetworkPolicy[] {
  const namespace = namespaceName(projectName);
  const labels = { [LABELS.managedBy]: MANAGED_BY, [LABELS.project]: projectName };
  return [
    {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: NAMESPACE_POLICY_NAMES.defaultDeny, namespace, labels },
      spec: { podSelector: {}, policyTypes: ["Ingress", "Egress"] },
    },
    {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: NAMESPACE_POLICY_NAMES.dns, namespace, labels },
      spec: {
        podSelector: {},
        policyTypes: ["Egress"],
        egress: [
          {
            to: [{ ...namespacePeer("kube-system"), podSelector: { matchLabels: { "k8s-app": "kube-dns" } } }],
            ports: [
              { protocol: "UDP", port: 53 },
              { protocol: "TCP", port: 53 },
            ],
          },
        ],
      },
    },
  ];
}

/** The deployment's policies: its engines', and its router's when it has one. Labelled with a hash of their specs (drift). */
export function renderDeploymentPolicies(input: RenderInput): V1NetworkPolicy[] {
  const { deployment } = input;
  const options = resolveOptions(deployment.spec, deployment.name, input.options);
  const isolation = resolveIsolation(input.options.isolation);
  const namespace = namespaceName(deployment.projectName);
  const router = deployment.spec.router;
  const own: V1NetworkPolicyPeer = { podSelector: { matchLabels: { [LABELS.deploymentId]: deployment.id } } };
  const except = exceptionsWithin(isolation.modelEgressCidr);
  const modelSource: V1NetworkPolicyPeer = { ipBlock: { cidr: isolation.modelEgressCidr, ...(except.length > 0 && { except }) } };

  const engines: V1LabelSelector = {
    matchLabels: { [LABELS.deploymentId]: deployment.id },
    matchExpressions: [{ key: LABELS.component, operator: "DoesNotExist" }],
  };
  const policies: Array<{ name: string; component?: string; spec: PolicySpec }> = [
    {
      name: enginePolicyName(deployment.name),
      spec: {
        podSelector: engines,
        policyTypes: ["Ingress", "Egress"],
        ingress: [
          { from: [own] },
          { from: [namespacePeer(isolation.agentNamespace), ...(router ? [] : [ingressPeer(isolation)])], ports: [tcp(options.enginePort)] },
        ],
        egress: [{ to: [own] }, { to: [modelSource], ports: [tcp(443)] }],
      },
    },
  ];
  if (router) {
    const external = router.kind !== "builtin";
    policies.push({
      name: routerPolicyName(deployment.name),
      component: "router",
      spec: {
        podSelector: { matchLabels: { [LABELS.deploymentId]: deployment.id, [LABELS.component]: "router" } },
        policyTypes: ["Ingress", "Egress"],
        ingress: [{ from: [ingressPeer(isolation), namespacePeer(isolation.agentNamespace)], ports: [tcp(options.routerPort)] }],
        egress: [
          { to: [own] },
          // Pod discovery: the API server's address is the cluster's own (often a private one), so no block is cut out.
          ...(external ? [{ to: [{ ipBlock: { cidr: "0.0.0.0/0" } }], ports: [tcp(443), tcp(6443)] }] : []),
        ],
      },
    });
  }
  return policies.map(({ name, component, spec }) => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name,
      namespace,
      labels: {
        [LABELS.managedBy]: MANAGED_BY,
        [LABELS.deployment]: deployment.name,
        [LABELS.deploymentId]: deployment.id,
        ...(component && { [LABELS.component]: component }),
        [LABELS.specHash]: fnv1a64(canonicalJson(spec)),
      },
    },
    spec: asPolicySpec(spec),
  }));
}
