import { findApiKeyById, revokeApiKey as markRevoked } from "../../../db/queries/api-keys.ts";
import { NotFound } from "../../domain/errors.ts";
import { canSeeProject, requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";

/** Revoked keys stay listed (with revokedAt) for audit; they never authenticate again. */
export async function revokeApiKey({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<void> {
  const user = requireUser(ctx.principal, "admin");
  const row = await findApiKeyById(ctx.db, input.id);
  const visible = row && (row.projectId === null ? user.projectId === null : canSeeProject(user, row.projectId));
  if (!row || !visible) throw new NotFound(`No API key with id "${input.id}".`);
  if (row.revokedAt === null) await markRevoked(ctx.db, row.id, ctx.clock.now());
  ctx.principals?.forgetKey(row.id);
}
