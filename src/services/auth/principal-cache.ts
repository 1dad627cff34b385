// A short-lived, per-instance memory of which token is which principal, so a hot
// read costs one query instead of two. Entries live `ttlMs` at most, and never past the
// credential's own expiry. A revocation is announced to every instance (NOTIFY, see
// src/services/notifications/notification-hub.ts), which forgets the principal at once;
// `ttlMs` bounds how long a key keeps working only where no notice arrives (Neon, or a
// LISTEN connection that is down). Bounded: the oldest entries go first.
import { principalIdOf, type Principal } from "../../domain/principal.ts";

interface Entry {
  principal: Principal;
  expiresAt: number;
}

export class PrincipalCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(token: string, now: Date): Principal | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (entry.expiresAt <= now.getTime()) {
      this.entries.delete(token);
      return undefined;
    }
    return entry.principal;
  }

  /** `notAfter`: when the credential itself stops working (a rotated agent credential). */
  set(token: string, principal: Principal, now: Date, notAfter?: Date): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    const expiresAt = Math.min(now.getTime() + this.ttlMs, notAfter?.getTime() ?? Infinity);
    this.entries.set(token, { principal, expiresAt });
  }

  /** Forgets every token of one API key (after it is revoked here). */
  forgetKey(keyId: string): void {
    this.forgetPrincipal(keyId);
  }

  /** Forgets every token of one API key or agent credential, by its id. */
  forgetPrincipal(id: string): void {
    for (const [token, entry] of this.entries) {
      if (principalIdOf(entry.principal) === id) this.entries.delete(token);
    }
  }
}
