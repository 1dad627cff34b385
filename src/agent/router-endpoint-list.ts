// The builtin router's endpoint list (pure): observed engine pods → what `PUT /admin/endpoints`
// carries (docs/design.md §6). A serving pod that is Ready and not terminating is an endpoint; one the
// plan is about to delete is `draining` (so the router sends it nothing new before it goes);
// anything else is left out. The leader of a multi-host instance is listed only while its whole
// group is ready (instance-group.ts): a leader whose follower is lost serves nothing, so the next
// push withdraws it. The list is sorted by id, so equal clusters give equal bodies and
// the agent can tell "changed since the last push" from a hash.
import type { V1Pod } from "@kubernetes/client-node";
import { canonicalJson, fnv1a64, LABELS, PORTS, type RenderInput, resolveOptions } from "../../k8s/render/index.ts";
import type { Role, RoleKind } from "../domain/deployment-spec.ts";
import { recordedWidth } from "./elastic.ts";
import { judgeGroup, leaderServed } from "./instance-group.ts";
import { isPodReady, replicaOf, roleOf } from "./plan.ts";

export interface RouterEndpoint {
  /** The pod name: stable for the instance member, so the router keeps its in-flight count. */
  id: string;
  url: string;
  role: RoleKind;
  /** External DP: the pod's first data-parallel rank (its only one when dataLocal is 1). */
  rank?: number;
  state: "eligible" | "draining";
  /** Elastic EP leader: the DP engines behind it (its proven width), so the router weighs it by them. */
  ranks?: number;
  /** SGLang prefill: where decode servers fetch the KV (bootstrap_host is the pod address). */
  bootstrapPort?: number;
}

export interface EndpointsBody {
  endpoints: RouterEndpoint[];
  /** Scale to zero: hold requests for a role with no endpoint (until one arrives) instead of answering 503. */
  holdWhenEmpty?: true;
}

/**
 * The push body: the list, plus `holdWhenEmpty` when the autoscaler may take a role to zero
 * (its demand is then the requests the router holds). Every hash of what a router should hold
 * comes from here, so pushes and acknowledgement checks agree.
 */
export function buildEndpointsBody(render: RenderInput, pods: readonly V1Pod[], draining: ReadonlySet<string> = new Set()): EndpointsBody {
  const scaling = render.deployment.spec.scaling;
  const toZero = scaling !== undefined && scaling.mode !== "off" && scaling.roles.some((role) => role.minReplicas === 0);
  return { endpoints: buildEndpointList(render, pods, draining), ...(toZero && { holdWhenEmpty: true as const }) };
}

/**
 * @param draining pod names the plan deletes this pass (surplus or stale instances).
 */
export function buildEndpointList(render: RenderInput, pods: readonly V1Pod[], draining: ReadonlySet<string> = new Set()): RouterEndpoint[] {
  const { spec, name } = render.deployment;
  const { enginePort } = resolveOptions(spec, name, render.options);
  const endpoints: RouterEndpoint[] = [];
  const whole = new Map<string, boolean>();
  const groupReady = (role: Role, pod: V1Pod) => {
    const key = `${role.name}/${replicaOf(pod)}`;
    if (!whole.has(key)) {
      const members = pods.filter((p) => roleOf(p) === role.name && replicaOf(p) === replicaOf(pod));
      // The leader's revision is the group's: a group rolled as a unit is judged against itself here.
      whole.set(key, judgeGroup(render, role, replicaOf(pod), members, pod.metadata?.labels?.[LABELS.specHash] ?? "").ready);
    }
    return whole.get(key)!;
  };
  for (const pod of pods) {
    const role = spec.roles.find((r) => r.name === roleOf(pod));
    const ip = pod.status?.podIP;
    if (!role || !ip || pod.metadata?.labels?.[LABELS.serving] !== "true" || !isPodReady(pod)) continue;
    if (leaderServed(role) && !groupReady(role, pod)) continue;
    const id = pod.metadata!.name!;
    const member = Number(pod.metadata?.labels?.[LABELS.member] ?? 0);
    const externalDP = role.parallelism.externalDP && role.size > 1;
    endpoints.push({
      id,
      url: `http://${ip.includes(":") ? `[${ip}]` : ip}:${enginePort}`,
      role: role.kind,
      ...(externalDP ? { rank: member * role.parallelism.dataLocal } : {}),
      ...(role.elastic ? { ranks: recordedWidth(pod) ?? role.elastic.width } : {}),
      state: draining.has(id) ? "draining" : "eligible",
      ...(spec.engine.name === "sglang" && role.kind === "prefill" ? { bootstrapPort: PORTS.sglangBootstrap } : {}),
    });
  }
  return endpoints.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The identity of a push body: a router pod that acknowledged this hash holds exactly this list. */
export const endpointsHash = (body: EndpointsBody) => fnv1a64(canonicalJson(body));

/** Router pods that serve traffic (and so must hold the current list): Ready, not terminating, addressed. */
export const readyRouterPods = (pods: readonly V1Pod[]) => pods.filter((p) => isPodReady(p) && p.status?.podIP);

/**
 * What an acknowledgement is keyed on: the pod and its container's restart count, because a
 * restarted router container starts with no endpoints although its pod (and uid) stay the same.
 */
export const routerAckKey = (pod: V1Pod) =>
  `${pod.metadata?.uid}/${(pod.status?.containerStatuses ?? []).reduce((sum, c) => sum + (c.restartCount ?? 0), 0)}`;

/** Every Ready router pod acknowledged `hash`: the routers serve the current endpoint set. */
export function routersAcknowledged(routerPods: readonly V1Pod[], acks: ReadonlyMap<string, string>, hash: string): { acked: number; ready: number } {
  const ready = readyRouterPods(routerPods);
  return { acked: ready.filter((pod) => acks.get(routerAckKey(pod)) === hash).length, ready: ready.length };
}
