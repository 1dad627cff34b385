// The resource types the simulated API server serves and their discovery documents
// (/api, /apis, /api/v1, /apis/<group>/<version>), which kubectl's REST mapper and
// client-node's KubernetesObjectApi read to turn a kind into a URL.

export interface ResourceType {
  group: string;
  version: string;
  /** Plural, lower case: the URL segment. */
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  /** Subresources served under `<name>/<sub>`. */
  subresources: string[];
  /** Whether spec and status are written separately (`/status`). */
  hasStatus: boolean;
}

const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

function type(group: string, version: string, resource: string, kind: string, namespaced: boolean, extra: Partial<ResourceType> = {}): ResourceType {
  return { group, version, resource, kind, namespaced, singular: kind.toLowerCase(), subresources: [], hasStatus: false, ...extra };
}

export const RESOURCES: readonly ResourceType[] = [
  type("", "v1", "namespaces", "Namespace", false, { shortNames: ["ns"], subresources: ["status"], hasStatus: true }),
  type("", "v1", "nodes", "Node", false, { shortNames: ["no"], subresources: ["status"], hasStatus: true }),
  type("", "v1", "pods", "Pod", true, { shortNames: ["po"], categories: ["all"], subresources: ["status", "log", "binding", "eviction"], hasStatus: true }),
  type("", "v1", "services", "Service", true, { shortNames: ["svc"], categories: ["all"], subresources: ["status"], hasStatus: true }),
  type("", "v1", "endpoints", "Endpoints", true, { shortNames: ["ep"], singular: "endpoints" }),
  type("", "v1", "events", "Event", true, { shortNames: ["ev"] }),
  type("", "v1", "configmaps", "ConfigMap", true, { shortNames: ["cm"] }),
  type("", "v1", "secrets", "Secret", true),
  type("", "v1", "serviceaccounts", "ServiceAccount", true, { shortNames: ["sa"] }),
  type("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, { shortNames: ["pvc"], subresources: ["status"], hasStatus: true }),
  type("apps", "v1", "deployments", "Deployment", true, { shortNames: ["deploy"], categories: ["all"], subresources: ["status", "scale"], hasStatus: true }),
  type("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true),
  type("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
  type("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true),
  type("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, { shortNames: ["netpol"] }),
  type("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false),
  type("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false),
  type("coordination.k8s.io", "v1", "leases", "Lease", true),
];

export const groupVersion = (r: { group: string; version: string }) => (r.group ? `${r.group}/${r.version}` : r.version);
export const resourceKey = (r: ResourceType) => (r.group ? `${r.resource}.${r.group}` : r.resource);

export function findResource(group: string, version: string, resource: string): ResourceType | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.resource === resource);
}

export function resourceForKind(apiVersion: string, kind: string): ResourceType | undefined {
  return RESOURCES.find((r) => groupVersion(r) === apiVersion && r.kind === kind);
}

/** The resource named like `pods` or `deployments` in the core or apps group (in-process callers). */
export function resourceOf(name: string, group = ""): ResourceType {
  const found = RESOURCES.find((r) => r.resource === name && r.group === group);
  if (!found) throw new Error(`no resource ${name} in group "${group}"`);
  return found;
}

export const versionInfo = {
  major: "1",
  minor: "32",
  gitVersion: "v1.32.0-berth-sim",
  gitCommit: "0000000000000000000000000000000000000000",
  gitTreeState: "clean",
  buildDate: "2025-01-01T00:00:00Z",
  goVersion: "go1.23.0",
  compiler: "gc",
  platform: "linux/amd64",
};

export function coreVersions(serverAddress: string) {
  return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }] };
}

function apiGroup(name: string) {
  const versions = [...new Set(RESOURCES.filter((r) => r.group === name).map((r) => r.version))].map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions, preferredVersion: versions[0]! };
}

export function groupList() {
  const names = [...new Set(RESOURCES.map((r) => r.group).filter((g) => g !== ""))];
  return { kind: "APIGroupList", apiVersion: "v1", groups: names.map(apiGroup) };
}

export function groupDocument(group: string) {
  if (!RESOURCES.some((r) => r.group === group)) return undefined;
  return { kind: "APIGroup", apiVersion: "v1", ...apiGroup(group) };
}

export function resourceList(group: string, version: string) {
  const types = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (types.length === 0) return undefined;
  const resources = types.flatMap((r) => [
    {
      name: r.resource,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: VERBS,
      ...(r.shortNames && { shortNames: r.shortNames }),
      ...(r.categories && { categories: r.categories }),
    },
    ...r.subresources.map((sub) => ({
      name: `${r.resource}/${sub}`,
      singularName: "",
      namespaced: r.namespaced,
      kind: sub === "scale" ? "Scale" : sub === "binding" ? "Binding" : sub === "eviction" ? "Eviction" : r.kind,
      ...(sub === "scale" && { group: "autoscaling", version: "v1" }),
      ...(sub === "eviction" && { group: "policy", version: "v1" }),
      verbs: sub === "log" ? ["get"] : sub === "binding" || sub === "eviction" ? ["create"] : ["get", "patch", "update"],
    })),
  ]);
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: groupVersion({ group, version }), resources };
}
