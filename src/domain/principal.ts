// Who is calling, and what each role may do. A user key is bound to one project or
// installation-wide; an agent credential is bound to one cluster and is no user at all.
import { Forbidden } from "./errors.ts";

export type KeyRole = "viewer" | "editor" | "admin";
export const KEY_ROLES = ["viewer", "editor", "admin"] as const;

export type Principal =
  | { kind: "user"; keyId: string; role: KeyRole; projectId: string | null }
  | { kind: "agent"; credentialId: string; clusterId: string };

export type UserPrincipal = Extract<Principal, { kind: "user" }>;

const RANK: Record<KeyRole, number> = { viewer: 0, editor: 1, admin: 2 };

/** The caller as a user key with at least `role`; agents and weaker keys get 403. */
export function requireUser(principal: Principal, role: KeyRole = "viewer"): UserPrincipal {
  if (principal.kind !== "user") {
    throw new Forbidden("An agent credential cannot use this route; use a user API key (bp_…).");
  }
  if (RANK[principal.role] < RANK[role]) {
    throw new Forbidden(`This needs a key with role "${role}" or higher; this key has role "${principal.role}".`);
  }
  return principal;
}

export function requireInstallationAdmin(principal: Principal): UserPrincipal {
  const user = requireUser(principal, "admin");
  if (user.projectId !== null) {
    throw new Forbidden("This needs an installation-wide admin key; this key is bound to one project.");
  }
  return user;
}

export function requireAgent(principal: Principal): Extract<Principal, { kind: "agent" }> {
  if (principal.kind !== "agent") {
    throw new Forbidden("Only a cluster agent credential (ba_…) may use this route; user keys cannot.");
  }
  return principal;
}

/** The id a revocation names: the API key's id, or the agent credential's. */
export function principalIdOf(principal: Principal): string {
  return principal.kind === "user" ? principal.keyId : principal.credentialId;
}

/** Whether a user may see a project's objects at all (others are reported as not found). */
export function canSeeProject(user: UserPrincipal, projectId: string): boolean {
  return user.projectId === null || user.projectId === projectId;
}

/**
 * Which clusters a user may see (docs/design.md §14.7): an installation-wide key every one; a
 * project-bound key those its project's deployments run on, so one tenant does not read the
 * names, agent versions and GPU inventory of clusters only other tenants use.
 */
export type ClusterScope = { all: true } | { all: false; usedByProjectId: string };

export function clusterScopeOf(user: UserPrincipal): ClusterScope {
  return user.projectId === null ? { all: true } : { all: false, usedByProjectId: user.projectId };
}
