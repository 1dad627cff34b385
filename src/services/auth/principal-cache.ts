// A short-lived, per-instance memory of which token is which principal, so a hot
// read costs one query instead of two. Entries live `ttlMs` at most: a key revoked on
// another API instance keeps working there for at most that long (on this instance,
// revocation forgets it at once). Bounded: the oldest entries go first.
import type { Principal } from "../../domain/principal.ts";

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

  set(token: string, principal: Principal, now: Date): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(token, { principal, expiresAt: now.getTime() + this.ttlMs });
  }

  /** Forgets every token of one API key (after it is revoked here). */
  forgetKey(keyId: string): void {
    for (const [token, entry] of this.entries) {
      if (entry.principal.kind === "user" && entry.principal.keyId === keyId) this.entries.delete(token);
    }
  }
}
