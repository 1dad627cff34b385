// Idempotency-Key for POSTs (Stripe's model): the first request with a key runs and,
// if it succeeds, its response is kept for the TTL and replayed for the same key and
// request; the same key with another request is refused; a duplicate arriving while
// the first still runs gets 409. Failed requests keep nothing, so they can be retried
// with the same key once fixed. A kept body is sealed with the server key (§14.3): answers
// such as a new API key's token must not rest in clear text for the TTL, and sealing keeps
// a replay byte-identical to the first answer.
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
} from "../../db/queries/idempotency.ts";
import { IdempotencyInFlight, IdempotencyMismatch, InvalidRequest } from "../domain/errors.ts";
import { sha256Hex } from "../domain/ids.ts";
import type { Principal } from "../domain/principal.ts";
import type { SystemContext } from "./context.ts";
import { openSecret, sealSecret } from "./secrets.ts";

/** A claim older than this whose request never finished (a crash) may be taken over. */
const IN_FLIGHT_LEASE_MS = 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type IdempotencyClaim = { outcome: "claimed" } | { outcome: "replay"; response: StoredResponse };

export function principalKey(principal: Principal): string {
  return principal.kind === "user" ? `user:${principal.keyId}` : `agent:${principal.credentialId}`;
}

export async function claimIdempotency({
  ctx,
  input,
}: {
  ctx: SystemContext;
  input: { principal: Principal; key: string; method: string; path: string; body: string };
}): Promise<IdempotencyClaim> {
  if (!KEY_PATTERN.test(input.key)) {
    throw new InvalidRequest("The Idempotency-Key header is not valid.", [
      { header: "Idempotency-Key", message: "must be 1–255 visible ASCII characters, e.g. a UUID" },
    ]);
  }
  const now = ctx.clock.now();
  const fingerprint = await sha256Hex(`${input.method} ${input.path}\n${input.body}`);
  const claim = await claimIdempotencyKey(ctx.db, {
    principal: principalKey(input.principal),
    key: input.key,
    fingerprint,
    now,
    expiresAt: new Date(now.getTime() + ctx.config.idempotencyTtlSeconds * 1000),
    staleBefore: new Date(now.getTime() - IN_FLIGHT_LEASE_MS),
  });
  if (claim.outcome === "claimed") return { outcome: "claimed" };
  if (claim.outcome === "contended") {
    throw new IdempotencyInFlight(`A request with Idempotency-Key "${input.key}" is being retried at this moment; retry in a moment.`);
  }
  const existing = claim.row;
  if (existing.fingerprint !== fingerprint) {
    throw new IdempotencyMismatch(
      `Idempotency-Key "${input.key}" was used for a different request; use a new key for a new request.`,
    );
  }
  if (!existing.completed) {
    throw new IdempotencyInFlight(`A request with Idempotency-Key "${input.key}" is still running; retry in a moment.`);
  }
  const body = existing.responseBody ? await openSecret(ctx, existing.responseBody, bodyContext(existing.principal, existing.key)) : "";
  return { outcome: "replay", response: { status: existing.responseStatus!, headers: existing.responseHeaders ?? {}, body } };
}

export async function finishIdempotency({
  ctx,
  input,
}: {
  ctx: SystemContext;
  input: { principal: Principal; key: string; response: StoredResponse | null };
}): Promise<void> {
  const principal = principalKey(input.principal);
  if (input.response) {
    const body = await sealSecret(ctx, input.response.body, bodyContext(principal, input.key));
    await completeIdempotencyKey(ctx.db, principal, input.key, { ...input.response, body });
  } else await releaseIdempotencyKey(ctx.db, principal, input.key);
}

/** The row a stored body belongs to: a body moved to another principal's or key's row does not open. */
function bodyContext(principal: string, key: string): string {
  return `idempotency_keys/${principal}/${key}/response_body`;
}
