// Plan (pure): a deployment's desired intent + what the cluster holds → the next actions.
// Invariants: only missing objects are created; surplus replicas go highest index first;
// a spec change replaces at most one instance per role at a time, and only while every
// other instance of the role is Ready; every delete names the UID it observed.
import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import {
  LABELS,
  renderInstancePods,
  renderInstanceService,
  renderNamespace,
  renderRoleService,
  type RenderInput,
  specHashOf,
} from "../../k8s/render/index.ts";
import type { Observed } from "./observe.ts";

export type Action =
  | { kind: "applyNamespace"; object: V1Namespace }
  | { kind: "applyService"; object: V1Service }
  | { kind: "createPod"; object: V1Pod }
  | { kind: "deletePod"; namespace: string; name: string; uid: string; reason: "surplus" | "stale" | "deleting" }
  | { kind: "deleteService"; namespace: string; name: string; uid: string };

export interface PlanInput {
  render: RenderInput;
  deleting: boolean;
  observed: Observed;
}

export const replicaOf = (object: { metadata?: { labels?: Record<string, string> } }) =>
  Number(object.metadata?.labels?.[LABELS.replica] ?? -1);
export const roleOf = (object: { metadata?: { labels?: Record<string, string> } }) => object.metadata?.labels?.[LABELS.role] ?? "";
export const isTerminating = (pod: V1Pod) => pod.metadata?.deletionTimestamp != null;
export const isPodReady = (pod: V1Pod) =>
  !isTerminating(pod) && (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

export function planDeployment({ render, deleting, observed }: PlanInput): Action[] {
  if (deleting) return planDeletion(observed);
  const { deployment } = render;
  const actions: Action[] = [];
  const namespace = renderNamespace(deployment.projectName);
  const ns = namespace.metadata!.name!;
  if (!observed.namespaceExists) actions.push({ kind: "applyNamespace", object: namespace });
  const serviceNames = new Set(observed.services.map((s) => s.metadata?.name));
  const pods = observed.pods;

  for (const role of deployment.spec.roles) {
    const desired = role.replicas ?? 1;
    const hash = specHashOf(deployment.spec, role.name, render.options);
    const rolePods = pods.filter((p) => roleOf(p) === role.name);
    const byReplica = new Map<number, V1Pod[]>();
    for (const pod of rolePods) byReplica.set(replicaOf(pod), [...(byReplica.get(replicaOf(pod)) ?? []), pod]);

    const roleService = renderRoleService(render, role.name);
    if (!serviceNames.has(roleService.metadata!.name)) actions.push({ kind: "applyService", object: roleService });

    // Surplus instances, highest index first.
    const surplus = [...byReplica.keys()].filter((r) => r >= desired || r < 0).sort((a, b) => b - a);
    for (const replica of surplus) {
      for (const pod of byReplica.get(replica)!) {
        if (!isTerminating(pod)) actions.push(deletePod(pod, ns, "surplus"));
      }
    }

    // Missing instances (and missing members of existing ones).
    let settling = false; // an instance of the role is being created, replaced or is not Ready
    for (let replica = 0; replica < desired; replica++) {
      const present = byReplica.get(replica) ?? [];
      const instanceService = renderInstanceService(render, role.name, replica);
      if (instanceService && !serviceNames.has(instanceService.metadata!.name)) {
        actions.push({ kind: "applyService", object: instanceService });
      }
      const have = new Set(present.map((p) => p.metadata?.name));
      for (const pod of renderInstancePods(render, role.name, replica)) {
        if (!have.has(pod.metadata!.name)) {
          actions.push({ kind: "createPod", object: pod });
          settling = true;
        }
      }
      if (present.some((p) => isTerminating(p) || !isPodReady(p))) settling = true;
    }

    // Drift: replace one stale instance per role, only when every other instance is Ready.
    if (!settling) {
      const stale = [...byReplica.entries()]
        .filter(([replica, members]) => replica < desired && members.some((p) => p.metadata?.labels?.[LABELS.specHash] !== hash))
        .sort(([a], [b]) => b - a);
      const first = stale[0];
      if (first) for (const pod of first[1]) actions.push(deletePod(pod, ns, "stale"));
    }
  }
  return actions;
}

function planDeletion(observed: Observed): Action[] {
  const actions: Action[] = [];
  for (const pod of [...observed.pods].sort((a, b) => replicaOf(b) - replicaOf(a))) {
    if (!isTerminating(pod)) actions.push(deletePod(pod, pod.metadata!.namespace!, "deleting"));
  }
  for (const service of observed.services) {
    actions.push({
      kind: "deleteService",
      namespace: service.metadata!.namespace!,
      name: service.metadata!.name!,
      uid: service.metadata!.uid!,
    });
  }
  return actions;
}

function deletePod(pod: V1Pod, namespace: string, reason: "surplus" | "stale" | "deleting"): Action {
  return { kind: "deletePod", namespace: pod.metadata?.namespace ?? namespace, name: pod.metadata!.name!, uid: pod.metadata!.uid!, reason };
}
