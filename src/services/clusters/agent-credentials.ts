// Agent credentials after registration (docs/design.md §14.4): an agent rotates its own
// credential with an overlap window; an installation admin revokes every credential of a
// cluster, or issues a new join token (the previous one stops working). Revocations are
// announced (NOTIFY at commit) so every API instance ends the cluster's long-polls at once.
import {
  expireAgentCredential,
  findClusterById,
  insertAgentCredential,
  replaceJoinToken,
  revokeClusterCredentials,
} from "../../../db/queries/clusters.ts";
import { announceRevocations } from "../../../db/queries/revocations.ts";
import { NotFound, Unauthorized } from "../../domain/errors.ts";
import { newId, newToken, sha256Hex } from "../../domain/ids.ts";
import { requireAgent, requireInstallationAdmin } from "../../domain/principal.ts";
import { REVOKED_CREDENTIAL_DETAIL } from "../auth/authenticate.ts";
import type { ServiceContext } from "../context.ts";
import { toCluster } from "./cluster-view.ts";

export const JOIN_TOKEN_TTL_MS = 60 * 60 * 1000;

export interface RotatedCredential {
  clusterId: string;
  /** The new credential (ba_…), shown once. */
  token: string;
  /** When the calling credential stops working. */
  previousExpiresAt: string;
}

/** Issues a new credential for the caller's cluster; the caller's own keeps working for the overlap window. */
export async function rotateAgentCredential({ ctx }: { ctx: ServiceContext }): Promise<RotatedCredential> {
  const agent = requireAgent(ctx.principal);
  const now = ctx.clock.now();
  const previousExpiresAt = new Date(now.getTime() + ctx.config.agentCredentialOverlapSeconds * 1000);
  const token = newToken("ba");
  await ctx.db.transaction(async (tx) => {
    // The caller may have been revoked since it authenticated: then it gets nothing new.
    if (!(await expireAgentCredential(tx, agent.credentialId, previousExpiresAt, now))) throw new Unauthorized(REVOKED_CREDENTIAL_DETAIL);
    await insertAgentCredential(tx, { id: newId("agentCredential"), clusterId: agent.clusterId, tokenHash: await sha256Hex(token), createdAt: now });
  });
  // Cached here without the new expiry; the next request reads it again.
  ctx.principals?.forgetPrincipal(agent.credentialId);
  return { clusterId: agent.clusterId, token, previousExpiresAt: previousExpiresAt.toISOString() };
}

/** Revokes every credential of a cluster: its agent gets 401 and must register with a new join token. */
export async function revokeAgentCredentials({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<{ clusterId: string; revoked: number }> {
  requireInstallationAdmin(ctx.principal);
  const ids = await ctx.db.transaction(async (tx) => {
    if (!(await findClusterById(tx, input.id))) throw new NotFound(`No cluster with id "${input.id}"; list clusters with GET /v1/clusters.`);
    const revoked = await revokeClusterCredentials(tx, input.id, ctx.clock.now());
    await announceRevocations(tx, revoked);
    return revoked;
  });
  forgetRevoked(ctx, ids);
  return { clusterId: input.id, revoked: ids.length };
}

/** This instance acts on its own revocations at once, without waiting for the notice. */
export function forgetRevoked(ctx: ServiceContext, principalIds: readonly string[]): void {
  for (const id of principalIds) {
    ctx.principals?.forgetPrincipal(id);
    ctx.notifications?.revoked(id);
  }
}

/** A new one-time join token (1 h) for an existing cluster; an unused previous one stops working. */
export async function issueJoinToken({ ctx, input }: { ctx: ServiceContext; input: { id: string } }) {
  requireInstallationAdmin(ctx.principal);
  const now = ctx.clock.now();
  const joinToken = newToken("bj");
  const expiresAt = new Date(now.getTime() + JOIN_TOKEN_TTL_MS);
  const row = await replaceJoinToken(ctx.db, input.id, { hash: await sha256Hex(joinToken), expiresAt, now });
  if (!row) throw new NotFound(`No cluster with id "${input.id}"; list clusters with GET /v1/clusters.`);
  return { cluster: toCluster(row, now), joinToken, expiresAt: expiresAt.toISOString() };
}
