// Sealing and opening stored secrets with the installation's keyring (docs/design.md §14.3).
// `context` names the row and column a value belongs to; it is bound into the ciphertext.
import { seal, unseal, type SecretKeyring } from "../domain/secret-envelope.ts";
import type { SystemContext } from "./context.ts";

function keyringOf(ctx: Pick<SystemContext, "config">): SecretKeyring {
  if (!ctx.config.secretKeys) {
    throw new Error("No server key is configured (BERTH_SECRET_KEY); stored secrets can be neither sealed nor opened.");
  }
  return ctx.config.secretKeys;
}

export function sealSecret(ctx: Pick<SystemContext, "config">, plaintext: string, context: string): Promise<string> {
  return seal(keyringOf(ctx), plaintext, context);
}

export function openSecret(ctx: Pick<SystemContext, "config">, sealed: string, context: string): Promise<string> {
  return unseal(keyringOf(ctx), sealed, context);
}

/** The id of the key that seals now (a stored value under another id is re-sealed by maintenance). */
export function currentSecretKeyId(ctx: Pick<SystemContext, "config">): string {
  return keyringOf(ctx).current.id;
}
