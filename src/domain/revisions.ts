// Revision history and rollback (docs/design.md §3.1): the resource shapes, the retention
// limit and the pure decision of what spec a rollback writes.
import { z } from "zod";
import { DeploymentSpec, strictObject, type DeploymentSpec as Spec } from "./deployment-spec.ts";
import { Actor } from "./events.ts";
import { boundedInt, counter, timestamp } from "./limits.ts";

/**
 * How many revisions a deployment keeps. Rollbacks go to recent generations; an autoscaler
 * in active mode writes a generation per scaling step, so an unbounded history would grow
 * with traffic. 50 covers days of hand edits and hours of autoscaling (a step per
 * scaleDownStabilizationSeconds, 300 s by default) while a spec is a few KiB: ≤ ~250 KiB a
 * deployment. kubectl keeps 10 ReplicaSets by default (revisionHistoryLimit); berth's
 * revisions are rows, not running objects, so it can afford more.
 */
export const REVISIONS_RETAINED = 50;

export const Revision = z
  .object({
    generation: counter().describe("The generation this spec was"),
    spec: DeploymentSpec,
    actor: Actor.describe("Who wrote it: a user key, the autoscaler (an agent credential), or system (recorded before history existed)"),
    createdAt: timestamp(),
    rollbackOf: counter().optional().describe("Present when a rollback wrote it: the generation it restored"),
  })
  .meta({ id: "Revision" });
export type Revision = z.infer<typeof Revision>;

export const RollbackRequest = strictObject({
    generation: boundedInt(1, 2_147_483_647).describe("The retained generation whose spec to restore"),
  })
  .meta({ id: "RollbackRequest" });
export type RollbackRequest = z.infer<typeof RollbackRequest>;

/**
 * The spec a rollback to `target` writes, given the current one. Everything comes from the
 * target except what another writer owns (docs/decisions/0053):
 * - with `scaling.mode: active` now, the replicas of every role: the autoscaler sets them
 *   and would undo a restored count on its next step (like `kubectl rollout undo`, which
 *   restores the pod template and not the replica count);
 * - always, an elastic role's `elastic.width`: like replicas it is a size, not the
 *   configuration a rollback is for, and changing it re-forms the engine's EP group (a
 *   multi-step resize Operation); the resize verb changes it on purpose.
 * Identity fields are not touched here: the write path's admission refuses them (422), and
 * a result equal to the current spec writes nothing (the write path's no-change case).
 */
export function rollbackSpec(current: Spec, target: Spec): Spec {
  const keepReplicas = current.scaling?.mode === "active";
  const now = new Map(current.roles.map((role) => [role.name, role]));
  return {
    ...target,
    roles: target.roles.map((role) => {
      const live = now.get(role.name);
      if (!live) return role;
      const replicas = keepReplicas ? live.replicas : role.replicas;
      const elastic = role.elastic && live.elastic ? { ...role.elastic, width: live.elastic.width } : role.elastic;
      return { ...role, replicas, ...(elastic && { elastic }) };
    }),
  };
}

/** The oldest and newest retained generations, for the 404 that names the range. */
export function describeRetained(generations: { oldest: number; newest: number } | undefined): string {
  if (!generations) return "no revisions are retained";
  return generations.oldest === generations.newest
    ? `only generation ${generations.newest} is retained`
    : `generations ${generations.oldest}–${generations.newest} are retained`;
}
