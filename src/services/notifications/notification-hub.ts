// One per API instance: a single LISTEN session that tells this instance's open streams
// and long-polls that something changed, and ends the ones whose caller was revoked.
//
// - Change channels (deployment writes, events): a waiter sleeps until a notice arrives
//   on its channel or its timer ends. A counter per channel closes the race between a
//   poll and the wait after it: a waiter passes the count it saw before polling and
//   returns at once when the count has moved since.
// - Revocations: the payload is the revoked key's or credential's id. The hub forgets it
//   from the principal cache (through `onRevocation` listeners) and aborts every hold
//   taken with that principal.
// - Backstop: a NOTIFY is lost while the LISTEN connection is down, and Neon has none at
//   all, so while holds are open the hub asks the database every `revalidateMs` which of
//   their principals still work: one query per principal kind for all of them, not one
//   per stream. Expired agent credentials (rotation) end this way too.
import { listActiveApiKeyIds } from "../../../db/queries/api-keys.ts";
import { CHANGES_CHANNEL } from "../../../db/queries/change-log.ts";
import { listUsableAgentCredentialIds } from "../../../db/queries/clusters.ts";
import { EVENTS_CHANNEL } from "../../../db/queries/events.ts";
import { REVOCATIONS_CHANNEL } from "../../../db/queries/revocations.ts";
import type { Db } from "../../../db/client.ts";
import type { Clock } from "../../domain/clock.ts";
import { principalIdOf, type Principal } from "../../domain/principal.ts";
import { ADMIN_TOKEN_KEY_ID } from "../auth/authenticate.ts";

export type ListenFn = (channel: readonly string[], onNotify: (payload: string, channel: string) => void) => Promise<() => Promise<void>>;
export type ChangeChannel = typeof CHANGES_CHANNEL | typeof EVENTS_CHANNEL;

export interface NotificationHubOptions {
  db: Db;
  clock: Clock;
  /** The database's LISTEN (db/client.ts); absent (Neon): waiters fall back to their timers. */
  listen?: ListenFn;
  /** How often open holds' principals are checked against the database. */
  revalidateMs?: number;
  warn?: (obj: object, msg: string) => void;
}

/** A stream's or long-poll's registration: `signal` aborts when its principal stops working. */
export interface PrincipalHold {
  signal: AbortSignal;
  release(): void;
}

interface Waiter {
  channel: ChangeChannel;
  resume: () => void;
}

export const DEFAULT_REVALIDATE_MS = 5000;

export class NotificationHub {
  private readonly counts = new Map<string, number>();
  private readonly waiters = new Set<Waiter>();
  private readonly holds = new Map<string, { principal: Principal; controllers: Set<AbortController> }>();
  private readonly revocationListeners: Array<(principalId: string) => void> = [];
  private started: Promise<boolean> | undefined;
  private unlisteners: Array<() => Promise<void>> = [];
  private revalidateTimer: ReturnType<typeof setInterval> | undefined;
  private revalidating = false;
  private closed = false;

  constructor(private readonly options: NotificationHubOptions) {}

  /**
   * Starts listening (once; later calls share the first). Resolves to whether notices will
   * arrive: false without a LISTEN, or when it failed (then everything polls).
   */
  start(): Promise<boolean> {
    this.started ??= this.listenAll();
    return this.started;
  }

  onRevocation(listener: (principalId: string) => void): void {
    this.revocationListeners.push(listener);
  }

  /** How many notices `channel` has had; pass it to waitForChange after polling. */
  count(channel: ChangeChannel): number {
    return this.counts.get(channel) ?? 0;
  }

  /**
   * Resolves when `channel` has a notice after `seen` (its count before the caller polled),
   * after `ms`, or when `signal` aborts, whichever is first.
   */
  waitForChange(channel: ChangeChannel, seen: number, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.count(channel) !== seen || signal?.aborted || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = { channel, resume: () => finish() };
      const timer = setTimeout(() => finish(), Math.max(0, ms));
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        signal?.removeEventListener("abort", finish);
        resolve();
      };
      this.waiters.add(waiter);
      signal?.addEventListener("abort", finish, { once: true });
    });
  }

  /** Registers an open stream or long-poll of `principal`; release it when the request ends. */
  hold(principal: Principal): PrincipalHold {
    const controller = new AbortController();
    const id = principalIdOf(principal);
    let entry = this.holds.get(id);
    if (!entry) this.holds.set(id, (entry = { principal, controllers: new Set() }));
    entry.controllers.add(controller);
    this.startRevalidating();
    void this.start();
    return {
      signal: controller.signal,
      release: () => {
        const current = this.holds.get(id);
        if (!current) return;
        current.controllers.delete(controller);
        if (current.controllers.size === 0) this.holds.delete(id);
        if (this.holds.size === 0) this.stopRevalidating();
      },
    };
  }

  /** Forgets and ends everything of a principal that stopped working (a notice, or the backstop). */
  revoked(principalId: string): void {
    for (const listener of this.revocationListeners) listener(principalId);
    const entry = this.holds.get(principalId);
    if (!entry) return;
    this.holds.delete(principalId);
    for (const controller of entry.controllers) controller.abort(new Error("revoked"));
    if (this.holds.size === 0) this.stopRevalidating();
  }

  /** Checks every held principal against the database once; ends those that stopped working. */
  async revalidate(): Promise<void> {
    const keyIds: string[] = [];
    const credentialIds: string[] = [];
    for (const [id, { principal }] of this.holds) {
      // The admin token from configuration is no database row: it ends with the process.
      if (id === ADMIN_TOKEN_KEY_ID) continue;
      (principal.kind === "user" ? keyIds : credentialIds).push(id);
    }
    const { db, clock } = this.options;
    const [activeKeys, usableCredentials] = await Promise.all([
      listActiveApiKeyIds(db, keyIds),
      listUsableAgentCredentialIds(db, credentialIds, clock.now()),
    ]);
    for (const id of keyIds) if (!activeKeys.has(id)) this.revoked(id);
    for (const id of credentialIds) if (!usableCredentials.has(id)) this.revoked(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopRevalidating();
    for (const waiter of [...this.waiters]) waiter.resume();
    const unlisteners = this.unlisteners;
    this.unlisteners = [];
    await Promise.all(unlisteners.map((stop) => stop().catch(() => {})));
  }

  private async listenAll(): Promise<boolean> {
    const { listen } = this.options;
    if (!listen) return false;
    try {
      const stop = await listen([CHANGES_CHANNEL, EVENTS_CHANNEL, REVOCATIONS_CHANNEL], (payload, channel) => {
        if (channel === CHANGES_CHANNEL || channel === EVENTS_CHANNEL) this.changed(channel);
        // "" comes after a reconnect (notices may have been lost): check every hold now.
        else if (channel === REVOCATIONS_CHANNEL && payload) this.revoked(payload);
        else if (channel === REVOCATIONS_CHANNEL) this.revalidateSoon();
      });
      this.unlisteners.push(stop);
      if (this.closed) await this.close();
      return true;
    } catch (error) {
      this.options.warn?.({ err: String(error) }, "notification hub: LISTEN failed; streams poll on their timers");
      return false;
    }
  }

  private changed(channel: ChangeChannel): void {
    this.counts.set(channel, this.count(channel) + 1);
    for (const waiter of [...this.waiters]) if (waiter.channel === channel) waiter.resume();
  }

  private startRevalidating(): void {
    if (this.revalidateTimer || this.closed) return;
    this.revalidateTimer = setInterval(() => this.revalidateSoon(), this.options.revalidateMs ?? DEFAULT_REVALIDATE_MS);
    // Node: the backstop alone must not keep a process alive.
    (this.revalidateTimer as { unref?: () => void }).unref?.();
  }

  private stopRevalidating(): void {
    clearInterval(this.revalidateTimer);
    this.revalidateTimer = undefined;
  }

  private revalidateSoon(): void {
    if (this.revalidating || this.holds.size === 0) return;
    this.revalidating = true;
    this.revalidate()
      .catch((error: unknown) => this.options.warn?.({ err: String(error) }, "notification hub: revalidation failed; will retry"))
      .finally(() => (this.revalidating = false));
  }
}
