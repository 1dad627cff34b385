// Pure pod placement, after kube-scheduler's default profile restricted to what berth needs.
// Filters run per node in the scheduler's order and stop at the first that fails:
// NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector), NodeResourcesFit (pods, cpu,
// memory and extended resources such as nvidia.com/gpu). Feasible nodes are scored
// least-allocated over the resources the pod asks for (ties: fewer pods, then name), so
// placement is deterministic. A pod that fits nowhere gets the scheduler's own FitError text:
//   0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are
//   available: 2 No preemption victims found for incoming pod.
// Every pod has priority 0 here, so preemption never finds victims: resource failures read
// "No preemption victims found", the rest "Preemption is not helpful for scheduling".

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

export interface ResourceList {
  [name: string]: string | number | undefined;
}

export interface ContainerResources {
  resources?: { requests?: ResourceList; limits?: ResourceList };
}

export interface PodSpecForScheduling {
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  containers: ContainerResources[];
  initContainers?: ContainerResources[];
}

export interface SchedulingNode {
  name: string;
  labels: Record<string, string>;
  /** Allocatable quantities (`cpu`, `memory`, `pods`, `nvidia.com/gpu`, …). */
  allocatable: ResourceList;
  taints?: Taint[];
  unschedulable?: boolean;
}

export interface PlacedPod {
  nodeName: string;
  spec: PodSpecForScheduling;
}

export type Placement = { node: string } | { node?: undefined; message: string };

const SUFFIXES: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A Kubernetes quantity (`250m`, `64Gi`, `1e3`, `8`) as a number; throws on nonsense. */
export function parseQuantity(quantity: string | number | undefined): number {
  if (quantity === undefined) return 0;
  if (typeof quantity === "number") return quantity;
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/.exec(quantity.trim());
  if (!match) throw new Error(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got "${quantity}"`);
  return Number(match[1]) * SUFFIXES[match[2] ?? ""]!;
}

function containerRequests(container: ContainerResources): Record<string, number> {
  const out: Record<string, number> = {};
  // An extended resource's limit is its request when no request is given (and so is cpu/memory).
  for (const [name, value] of Object.entries(container.resources?.limits ?? {})) out[name] = parseQuantity(value);
  for (const [name, value] of Object.entries(container.resources?.requests ?? {})) out[name] = parseQuantity(value);
  return out;
}

/** What a pod asks of a node: the sum over containers, at least the largest init container's ask. */
export function podRequests(spec: PodSpecForScheduling): Record<string, number> {
  const total: Record<string, number> = {};
  for (const container of spec.containers) {
    for (const [name, value] of Object.entries(containerRequests(container))) total[name] = (total[name] ?? 0) + value;
  }
  for (const init of spec.initContainers ?? []) {
    for (const [name, value] of Object.entries(containerRequests(init))) total[name] = Math.max(total[name] ?? 0, value);
  }
  return total;
}

function tolerates(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.operator === "Exists") return toleration.key === undefined || toleration.key === "" || toleration.key === taint.key;
  return toleration.key === taint.key && (toleration.value ?? "") === (taint.value ?? "");
}

interface NodeVerdict {
  reasons: string[];
  /** Could evicting lower-priority pods help (only resource shortages)? */
  resolvable: boolean;
}

function filterNode(node: SchedulingNode, spec: PodSpecForScheduling, requests: Record<string, number>, used: Record<string, number>, podCount: number): NodeVerdict | undefined {
  const tolerations = spec.tolerations ?? [];
  if (node.unschedulable && !tolerations.some((t) => tolerates(t, { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" }))) {
    return { reasons: ["node(s) were unschedulable"], resolvable: false };
  }
  const untolerated = (node.taints ?? []).find((taint) => (taint.effect === "NoSchedule" || taint.effect === "NoExecute") && !tolerations.some((t) => tolerates(t, taint)));
  if (untolerated) return { reasons: [`node(s) had untolerated taint {${untolerated.key}: ${untolerated.value ?? ""}}`], resolvable: false };
  for (const [key, value] of Object.entries(spec.nodeSelector ?? {})) {
    if (node.labels[key] !== value) return { reasons: ["node(s) didn't match Pod's node affinity/selector"], resolvable: false };
  }
  const reasons: string[] = [];
  if (podCount + 1 > parseQuantity(node.allocatable.pods ?? 110)) reasons.push("Too many pods");
  const order = (name: string) => (name === "cpu" ? 0 : name === "memory" ? 1 : name === "ephemeral-storage" ? 2 : 3);
  for (const name of Object.keys(requests).sort((a, b) => order(a) - order(b) || a.localeCompare(b))) {
    const ask = requests[name]!;
    if (ask <= 0) continue;
    const free = parseQuantity(node.allocatable[name] ?? 0) - (used[name] ?? 0);
    if (ask > free + 1e-9) reasons.push(`Insufficient ${name}`);
  }
  return reasons.length > 0 ? { reasons, resolvable: true } : undefined;
}

/** kube-scheduler's `0/N nodes are available: …` sentence: reasons counted, then sorted as strings. */
function fitMessage(total: number, counts: Map<string, number>): string {
  const parts = [...counts].map(([reason, count]) => `${count} ${reason}`).sort();
  return `0/${total} nodes are available: ${parts.join(", ")}.`;
}

export function usedOnNode(nodeName: string, placed: readonly PlacedPod[]): { used: Record<string, number>; pods: number } {
  const used: Record<string, number> = {};
  let pods = 0;
  for (const pod of placed) {
    if (pod.nodeName !== nodeName) continue;
    pods++;
    for (const [name, value] of Object.entries(podRequests(pod.spec))) used[name] = (used[name] ?? 0) + value;
  }
  return { used, pods };
}

/**
 * Where `spec` goes among `nodes`, given the pods already placed (every pod bound to a node and
 * not yet finished, terminating ones included: they hold their resources until they are gone).
 */
export function schedulePod(spec: PodSpecForScheduling, nodes: readonly SchedulingNode[], placed: readonly PlacedPod[]): Placement {
  if (nodes.length === 0) return { message: "no nodes available to schedule pods" };
  const requests = podRequests(spec);
  const failures = new Map<string, number>();
  const preemption = new Map<string, number>();
  const feasible: { node: SchedulingNode; score: number; pods: number }[] = [];
  for (const node of nodes) {
    const { used, pods } = usedOnNode(node.name, placed);
    const verdict = filterNode(node, spec, requests, used, pods);
    if (!verdict) {
      // Least allocated: mean free share, after placement, of each resource the pod asks for.
      const asked = Object.keys(requests).filter((name) => requests[name]! > 0);
      const shares = asked.map((name) => {
        const capacity = parseQuantity(node.allocatable[name] ?? 0);
        return capacity > 0 ? (capacity - (used[name] ?? 0) - requests[name]!) / capacity : 0;
      });
      feasible.push({ node, score: shares.length > 0 ? shares.reduce((a, b) => a + b, 0) / shares.length : 1, pods });
      continue;
    }
    for (const reason of verdict.reasons) failures.set(reason, (failures.get(reason) ?? 0) + 1);
    const outcome = verdict.resolvable ? "No preemption victims found for incoming pod" : "Preemption is not helpful for scheduling";
    preemption.set(outcome, (preemption.get(outcome) ?? 0) + 1);
  }
  if (feasible.length > 0) {
    feasible.sort((a, b) => b.score - a.score || a.pods - b.pods || a.node.name.localeCompare(b.node.name));
    return { node: feasible[0]!.node.name };
  }
  const total = nodes.length;
  const message = `${fitMessage(total, failures)} preemption: ${fitMessage(total, preemption)}`;
  return { message };
}
