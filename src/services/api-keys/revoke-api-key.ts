import { findApiKeyById, revokeApiKey as markRevoked } from "../../../db/queries/api-keys.ts";
import { announceRevocations } from "../../../db/queries/revocations.ts";
import { NotFound } from "../../domain/errors.ts";
import { canSeeProject, requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";

/**
 * Revoked keys stay listed (with revokedAt) for audit; they never authenticate again. The
 * revocation is announced (NOTIFY at commit) so every API instance forgets the key and
 * ends its streams at once; this instance does so without waiting for the notice.
 */
export async function revokeApiKey({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<void> {
  const user = requireUser(ctx.principal, "admin");
  const row = await findApiKeyById(ctx.db, input.id);
  const visible = row && (row.projectId === null ? user.projectId === null : canSeeProject(user, row.projectId));
  if (!row || !visible) throw new NotFound(`No API key with id "${input.id}".`);
  if (row.revokedAt === null) {
    await ctx.db.transaction(async (tx) => {
      await markRevoked(tx, row.id, ctx.clock.now());
      await announceRevocations(tx, [row.id]);
    });
  }
  ctx.principals?.forgetKey(row.id);
  ctx.notifications?.revoked(row.id);
}
