// An endpoint's signing secrets at rest: sealed per row and column (§14.3). Rows written
// before sealing existed hold clear text until `sealEndpointSecrets` (run at every start)
// seals it; rows sealed under an older key are re-sealed with the current one there too,
// so an old key can be dropped from BERTH_SECRET_KEYS_PREVIOUS once a start has run with the new one.
import { and, eq, sql, type AnyColumn } from "drizzle-orm";
import type { Db } from "../../../db/client.ts";
import { webhookEndpoints } from "../../../db/schema.ts";
import { sealedKeyId } from "../../domain/secret-envelope.ts";
import type { SystemContext } from "../context.ts";
import { currentSecretKeyId, openSecret, sealSecret } from "../secrets.ts";

type Column = "secret" | "previous_secret";

export interface StoredEndpointSecrets {
  id: string;
  secret: string | null;
  previousSecret: string | null;
  secretSealed: string | null;
  previousSecretSealed: string | null;
}

const contextOf = (endpointId: string, column: Column) => `webhook_endpoints/${endpointId}/${column}`;

export function sealEndpointSecret(ctx: Pick<SystemContext, "config">, endpointId: string, column: Column, plaintext: string): Promise<string> {
  return sealSecret(ctx, plaintext, contextOf(endpointId, column));
}

/** The endpoint's current and previous secrets in clear text, for signing (throws when one cannot be opened). */
export async function openEndpointSecrets(
  ctx: Pick<SystemContext, "config">,
  row: StoredEndpointSecrets,
): Promise<{ secret: string; previousSecret: string | null }> {
  const open = async (plain: string | null, sealed: string | null, column: Column) =>
    sealed !== null ? openSecret(ctx, sealed, contextOf(row.id, column)) : plain;
  const secret = await open(row.secret, row.secretSealed, "secret");
  if (secret === null) throw new Error(`webhook endpoint ${row.id} has no signing secret`);
  return { secret, previousSecret: await open(row.previousSecret, row.previousSecretSealed, "previous_secret") };
}

/**
 * Seals every clear-text secret and re-seals those under an older key; returns how many rows
 * changed. Each update is conditional on the row still holding what was read, so instances
 * starting together (or a rotation meanwhile) never overwrite a newer secret.
 */
export async function sealEndpointSecrets(ctx: Pick<SystemContext, "config" | "db">): Promise<number> {
  const current = currentSecretKeyId(ctx);
  const rows: StoredEndpointSecrets[] = await ctx.db
    .select({
      id: webhookEndpoints.id,
      secret: webhookEndpoints.secret,
      previousSecret: webhookEndpoints.previousSecret,
      secretSealed: webhookEndpoints.secretSealed,
      previousSecretSealed: webhookEndpoints.previousSecretSealed,
    })
    .from(webhookEndpoints);
  const stale = (sealed: string | null) => sealed !== null && sealedKeyId(sealed) !== current;
  let changed = 0;
  for (const row of rows) {
    if (row.secret === null && row.previousSecret === null && !stale(row.secretSealed) && !stale(row.previousSecretSealed)) continue;
    const open = await openEndpointSecrets(ctx, row);
    const updated = await updateIfUnchanged(ctx.db, row, {
      secret: null,
      previousSecret: null,
      secretSealed: await sealEndpointSecret(ctx, row.id, "secret", open.secret),
      previousSecretSealed: open.previousSecret === null ? null : await sealEndpointSecret(ctx, row.id, "previous_secret", open.previousSecret),
    });
    if (updated) changed++;
  }
  return changed;
}

const unchanged = (column: AnyColumn, value: string | null) => sql`${column} is not distinct from ${value}`;

async function updateIfUnchanged(db: Db, read: StoredEndpointSecrets, next: Omit<StoredEndpointSecrets, "id">): Promise<boolean> {
  const result = await db
    .update(webhookEndpoints)
    .set(next)
    .where(
      and(
        eq(webhookEndpoints.id, read.id),
        unchanged(webhookEndpoints.secret, read.secret),
        unchanged(webhookEndpoints.previousSecret, read.previousSecret),
        unchanged(webhookEndpoints.secretSealed, read.secretSealed),
        unchanged(webhookEndpoints.previousSecretSealed, read.previousSecretSealed),
      ),
    )
    .returning({ id: webhookEndpoints.id });
  return result.length > 0;
}
