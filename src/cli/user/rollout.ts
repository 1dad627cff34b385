// What `berth rollout` shows, decided from API bodies alone (no I/O): whether a deployment has
// rolled out its current generation, per-role progress, and a revision's change summary.
import type { Deployment, Revision } from "../../../clients/typescript/src/index.ts";
import { show } from "./format.ts";
import { diffJson } from "./json-diff.ts";

export interface RolloutProgress {
  /** The current generation is observed and every role runs it, ready. */
  done: boolean;
  /** Failed needs a change, not more waiting. */
  failed: boolean;
  /** One line: where the rollout stands. */
  summary: string;
  /** Per role: "name updated/desired updated, ready/desired ready" ("?" where not observed). */
  roles: string[];
}

/**
 * Rolled out = the agent observed this generation and, per role, every desired instance is
 * updated and ready. The UpToDate condition, where the agent reports it for this generation,
 * decides (its reason says why not, e.g. RollingOut or SurgeDoesNotFit); without it the
 * counts do, and a count not observed never counts as done.
 */
export function rolloutProgress(deployment: Deployment): RolloutProgress {
  const { generation, status } = deployment;
  const observed = status.observedGeneration;
  const roles = deployment.spec.roles.map((role) => {
    const seen = (status.roles ?? []).find((r) => r.name === role.name);
    const desired = seen?.desired ?? role.replicas;
    const count = (n: number | undefined) => (n === undefined ? "?" : String(n));
    return { name: role.name, desired, updated: seen?.updated, ready: seen?.ready, line: `${role.name}: ${count(seen?.updated)}/${desired} updated, ${count(seen?.ready)}/${desired} ready` };
  });
  const lines = roles.map((role) => role.line);
  if (status.phase === "Failed") {
    return { done: false, failed: true, summary: `generation ${generation} failed: ${whyFailed(deployment)}`, roles: lines };
  }
  if (observed === undefined || observed < generation) {
    return { done: false, failed: false, summary: `waiting for the agent to observe generation ${generation} (observed ${observed ?? "none"})`, roles: lines };
  }
  const upToDate = (status.conditions ?? []).find((c) => c.type === "UpToDate" && (c.observedGeneration ?? generation) === generation);
  if (upToDate) {
    const done = upToDate.status === "True";
    const summary = done ? `generation ${generation} rolled out` : `generation ${generation} rolling out: ${upToDate.reason}: ${upToDate.message}`;
    return { done, failed: false, summary, roles: lines };
  }
  const behind = roles.filter((role) => role.updated !== role.desired || role.ready !== role.desired);
  if (behind.length === 0) return { done: true, failed: false, summary: `generation ${generation} rolled out`, roles: lines };
  return { done: false, failed: false, summary: `generation ${generation} rolling out: ${behind.map((r) => r.name).join(", ")} not yet updated and ready`, roles: lines };
}

function whyFailed(deployment: Deployment): string {
  const reasons = (deployment.status.conditions ?? []).filter((c) => c.status === "False").map((c) => `${c.type} ${c.reason}: ${c.message}`);
  return reasons.length > 0 ? reasons.join("; ") : "phase Failed";
}

/** Who wrote a revision, for the history table. */
export function describeActor(revision: Revision): string {
  const { kind, keyId } = revision.actor;
  return keyId && kind === "user" ? `user ${keyId}` : kind;
}

const MAX_CHANGES = 3;

/**
 * What a revision changed against the one before it: up to three spec pointers with their
 * values, then how many more. The oldest retained revision has nothing to compare with.
 */
export function describeChange(revision: Revision, previous: Revision | undefined): string {
  const prefix = revision.rollbackOf === undefined ? "" : `rollback to ${revision.rollbackOf}: `;
  if (!previous) return revision.generation === 1 ? "created" : "(oldest retained)";
  const changes = diffJson(previous.spec, revision.spec);
  if (changes.length === 0) return `${prefix}no spec change`;
  const shown = changes.slice(0, MAX_CHANGES).map((c) => `${c.pointer} ${show(c.before)} -> ${show(c.after)}`);
  const more = changes.length > MAX_CHANGES ? `, +${changes.length - MAX_CHANGES} more` : "";
  return `${prefix}${shown.join(", ")}${more}`;
}

/** The generation `rollout undo` goes back to: the newest retained one before the current. */
export function previousGeneration(current: number, revisions: Revision[]): number | undefined {
  const earlier = revisions.map((r) => r.generation).filter((g) => g < current);
  return earlier.length === 0 ? undefined : Math.max(...earlier);
}
