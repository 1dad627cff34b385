// External DP coverage (pure, docs/design.md §8.3): each pod of an external DP role is its own HTTP
// endpoint for `dataLocal` ranks starting at member × dataLocal, so the router must hold every
// one of them. Per role: `declared` = data × replicas, `eligible` = ranks of current instances
// whose pods the endpoint list marks eligible (Ready, not terminating, not draining), `serving` =
// eligible ranks every Ready router pod confirms. A router pod confirms an endpoint when its
// GET /admin/endpoints lists the same id at the same url, state eligible, with /v1/models read
// (a list, no read error) naming the served model: the only health the router exposes, and
// what it needs to route the model there. Unread routers leave `serving` absent, never 0.
import type { V1Pod } from "@kubernetes/client-node";
import { LABELS, type RenderInput } from "../../k8s/render/index.ts";
import type { RankCoverage, Role } from "../domain/deployment-spec.ts";
import { replicaOf } from "./plan.ts";
import { buildEndpointList } from "./router-endpoint-list.ts";
import type { AdminView } from "./signals/router.ts";

/** What the pass read from the deployment's Ready router pods. */
export interface RouterViews {
  /** One per Ready router pod that answered. */
  views: readonly AdminView[];
  /** Ready router pods that could not be read (or why none could), one line each. */
  failures: readonly string[];
}

export interface RoleCoverage {
  role: string;
  ranks: RankCoverage;
  /** Declared ranks not confirmed serving, by instance (absent when serving is unknown). */
  unserved?: Array<{ replica: number; ranks: number[] }>;
}

export interface CoverageCondition {
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  /** Whether Ready waits for it: only a router whose view the agent reads can confirm coverage. */
  gatesReady: boolean;
}

/** Roles whose ranks are separate router endpoints (admission refuses externalDP with elastic). */
export const externalDpRoles = (render: RenderInput): Role[] =>
  render.deployment.spec.roles.filter((role) => role.parallelism.externalDP && !role.elastic);

/** The pass reads router views only where they decide something: a builtin router in front of external DP. */
export const needsRouterViews = (render: RenderInput): boolean =>
  render.deployment.spec.router?.kind === "builtin" && externalDpRoles(render).length > 0;

/**
 * @param views undefined when the router's view was not read (a non-builtin router, or not this pass).
 */
export function rankCoverage(
  render: RenderInput,
  pods: readonly V1Pod[],
  draining: ReadonlySet<string>,
  views: RouterViews | undefined,
): RoleCoverage[] {
  const model = render.deployment.spec.model.name;
  const podsByName = new Map(pods.map((pod) => [pod.metadata?.name, pod]));
  const endpoints = buildEndpointList(render, pods, draining);
  // serving is known only when every Ready router pod answered; none Ready means none routes.
  const known = views !== undefined && views.failures.length === 0;
  const confirmed = (endpoint: { id: string; url: string }) =>
    known &&
    views.views.length > 0 &&
    views.views.every((view) =>
      view.endpoints.some(
        (seen) =>
          seen.id === endpoint.id &&
          seen.url === endpoint.url &&
          seen.state === "eligible" &&
          Array.isArray(seen.models) &&
          seen.models.includes(model) &&
          seen.modelsError === undefined,
      ),
    );

  return externalDpRoles(render).map((role) => {
    const desired = role.replicas;
    const { data, dataLocal } = role.parallelism;
    const eligible = new Set<string>();
    const serving = new Set<string>();
    for (const endpoint of endpoints) {
      if (endpoint.state !== "eligible") continue;
      const pod = podsByName.get(endpoint.id);
      if (!pod || pod.metadata?.labels?.[LABELS.role] !== role.name) continue;
      const replica = replicaOf(pod);
      if (replica < 0 || replica >= desired) continue; // a surplus instance is not declared
      const first = Number(pod.metadata?.labels?.[LABELS.member] ?? 0) * dataLocal;
      const isServing = confirmed(endpoint);
      for (let rank = first; rank < Math.min(first + dataLocal, data); rank++) {
        eligible.add(`${replica}/${rank}`);
        if (isServing) serving.add(`${replica}/${rank}`);
      }
    }
    const unserved: Array<{ replica: number; ranks: number[] }> = [];
    for (let replica = 0; replica < desired; replica++) {
      const ranks = Array.from({ length: data }, (_, rank) => rank).filter((rank) => !serving.has(`${replica}/${rank}`));
      if (ranks.length > 0) unserved.push({ replica, ranks });
    }
    return {
      role: role.name,
      ranks: { declared: data * desired, eligible: eligible.size, ...(known && { serving: serving.size }) },
      ...(known && { unserved }),
    };
  });
}

/** `r0 ranks 2, 3; r1 rank 0` */
const formatUnserved = (unserved: ReadonlyArray<{ replica: number; ranks: number[] }>) =>
  unserved.map(({ replica, ranks }) => `r${replica} rank${ranks.length === 1 ? "" : "s"} ${ranks.join(", ")}`).join("; ");

/** RouterCoverage: True when every declared rank is serving; undefined without external DP roles. */
export function routerCoverageCondition(render: RenderInput, coverage: readonly RoleCoverage[], views: RouterViews | undefined): CoverageCondition | undefined {
  if (coverage.length === 0) return undefined;
  const router = render.deployment.spec.router;
  if (!router) return undefined; // admission refuses external DP without a router
  if (router.kind !== "builtin") {
    return {
      status: "Unknown",
      reason: "CoverageNotObservable",
      message: `router ${router.kind} does not report which endpoints it serves; only the builtin router's coverage is confirmed`,
      gatesReady: false,
    };
  }
  if (!views) return { status: "Unknown", reason: "RouterNotRead", message: "the router's endpoint view was not read", gatesReady: true };
  if (views.failures.length > 0) {
    return { status: "Unknown", reason: "RouterUnreadable", message: `could not read every Ready router pod: ${views.failures.join("; ")}`, gatesReady: true };
  }
  const counts = coverage.map((c) => `${c.role} ${c.ranks.serving}/${c.ranks.declared} ranks serving`).join(", ");
  const missing = coverage.filter((c) => (c.unserved ?? []).length > 0);
  if (missing.length === 0) return { status: "True", reason: "AllRanksRouted", message: `${counts}; every Ready router pod holds each rank`, gatesReady: true };
  const named = missing.map((c) => (coverage.length === 1 ? formatUnserved(c.unserved!) : `${c.role} ${formatUnserved(c.unserved!)}`)).join("; ");
  const why = views.views.length === 0 ? "no Ready router pod" : "not confirmed by every Ready router pod";
  return { status: "False", reason: "RanksNotRouted", message: `${named} ${why} (${counts})`, gatesReady: true };
}
