// Project names berth keeps for itself (docs/design.md §14.7). A project's namespace in every
// cluster is `berth-<name>` (k8s/render/names.ts), so a project named after a namespace that
// berth's own parts run in would have the agent render tenant workloads — and NetworkPolicies,
// and Pod Security labels — into that namespace.

/** Namespaces berth installs itself into; kept equal to k8s/ by test/domain/project-names.test.ts. */
export const RESERVED_NAMESPACES = {
  /** The agent's (k8s/render/network-policies.ts DEFAULT_AGENT_NAMESPACE, k8s/manifests/agent-install.ts). */
  agent: "berth-system",
  /** The API's install bundle (k8s/manifests/bundles.ts API_NAMESPACE). */
  api: "berth-api",
} as const;

export const projectNamespace = (name: string) => `berth-${name}`;

export interface ReservedName {
  reason: string;
  suggestion: string;
}

/** Why a project may not have this name, and one that it may have; undefined when the name is free to use. */
export function reservedProjectName(name: string): ReservedName | undefined {
  if (name === "default") {
    return { reason: `"default" is the installation's own first project, created when it starts`, suggestion: "default-team" };
  }
  if (name === "kube" || name.startsWith("kube-")) {
    const rest = name.slice("kube-".length);
    return {
      reason: `names starting with "kube" are kept for Kubernetes' own namespaces`,
      suggestion: rest && !reservedProjectName(rest) ? rest : "cluster-team",
    };
  }
  const namespace = projectNamespace(name);
  const owner = Object.entries(RESERVED_NAMESPACES).find(([, reserved]) => reserved === namespace)?.[0];
  if (owner) {
    return { reason: `its namespace ${namespace} is where berth's ${owner} runs`, suggestion: `${name}-team` };
  }
  return undefined;
}
