// The agent's two modes (pure). Cluster mode: cluster-wide informers, project namespaces created
// on demand. Namespaced mode: an allow-list of existing `berth-<project>` namespaces; the agent
// watches only inside them and never creates a namespace, so a deployment whose namespace is not
// listed, missing or unreadable gets an error in its status (never Ready) instead of a write.
import { isDns1123Label } from "../domain/deployment-spec.ts";

export type AgentMode = { mode: "cluster" } | { mode: "namespaced"; namespaces: readonly string[] };

/**
 * `--namespaces berth-a,berth-b` (or BERTH_AGENT_NAMESPACES): unset or blank → cluster mode.
 * Throws with the offending entry on a name that is not a DNS-1123 label.
 */
export function parseAgentMode(list: string | undefined): AgentMode {
  if (list === undefined || list.trim() === "") return { mode: "cluster" };
  const names = [...new Set(list.split(",").map((name) => name.trim()).filter((name) => name !== ""))];
  const bad = names.find((name) => !isDns1123Label(name));
  if (bad !== undefined) throw new Error(`"${bad}" is not a namespace name (a DNS-1123 label: lower case letters, digits, '-'; at most 63)`);
  return { mode: "namespaced", namespaces: names };
}

export interface NamespaceFacts {
  namespace: string;
  /** The cache holds the namespace (read by name in namespaced mode). */
  exists: boolean;
  /** Why reading it failed other than by 404 (a 403: no Role there). */
  readProblem?: string;
  /**
   * The Pod Security labels (name → value berth renders) the namespace lacks. Cluster mode
   * re-applies the namespace; a namespaced agent may not patch it, and no engine pod may run in a
   * namespace without them, so it refuses and says which label to set.
   */
  missingLabels?: Readonly<Record<string, string>>;
}

/** undefined: the pass may go on; otherwise the error its status reports (and nothing is written). */
export function namespaceRefusal(mode: AgentMode, facts: NamespaceFacts): string | undefined {
  if (mode.mode === "cluster") return undefined;
  const { namespace } = facts;
  if (!mode.namespaces.includes(namespace)) {
    return `namespace ${namespace} is not in this agent's allow-list (${mode.namespaces.join(", ")}): add it to --namespaces / BERTH_AGENT_NAMESPACES and grant the agent its Role there (docs/install.md)`;
  }
  if (facts.readProblem) return `${facts.readProblem}: grant the agent its Role in ${namespace} (docs/install.md)`;
  if (!facts.exists) return `namespace ${namespace} does not exist: a namespaced agent never creates namespaces; create it (kubectl create namespace ${namespace}) with the agent's Role in it`;
  const missing = Object.entries(facts.missingLabels ?? {});
  if (missing.length > 0) {
    const labels = missing.map(([key, value]) => `${key}=${value}`).join(" ");
    return `namespace ${namespace} lacks the Pod Security labels ${missing.map(([key]) => key).join(", ")}, and a namespaced agent never changes a namespace: label it (kubectl label namespace ${namespace} ${labels})`;
  }
  return undefined;
}
