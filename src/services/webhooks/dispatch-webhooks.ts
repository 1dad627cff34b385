// The webhook dispatcher: one pass of fan-out, claim, send, record. Any number of passes
// may run at once, in one process or many (the serve loop, POST /v1/internal/dispatch,
// Deno.cron): fan-out is done by whoever holds the cursor row, claims skip locked rows.
//
// 1. Fan-out (one transaction): lock the cursor row (SKIP LOCKED: if another dispatcher
//    has it, skip), read committed events after it — they commit in seq order, so none
//    is missed — create a delivery per matching enabled endpoint, move the cursor.
// 2. Claim due deliveries of enabled endpoints (at most `endpointConcurrency` per endpoint),
//    leasing each for `leaseSeconds`.
// 3. Send each outside any transaction: check the target again (SSRF guard on the
//    resolved address, connection pinned to it), sign, POST.
// 4. Record the attempt and the delivery's next state (if the lease is still ours), then
//    the endpoint's health: failing since, or disabled (410, or failing for 3 days) with
//    a webhook.disabled event.
// A dispatcher that dies between 2 and 4 leaves its deliveries to be claimed again when
// the lease ends: at least once, with a duplicate only for a send that was not recorded.
import {
  claimDueDeliveries,
  lockFanoutCursor,
  recordAttempt,
  writeFanout,
  type ClaimedDelivery,
  type NewDeliveryRow,
} from "../../../db/queries/webhook-deliveries.ts";
import { disableWebhookEndpoint, setWebhookEndpointFailing } from "../../../db/queries/webhooks.ts";
import { newId } from "../../domain/ids.ts";
import { classifyAttemptFailure } from "../../domain/webhook-attempt-failure.ts";
import { isSuccess, parseRetryAfter, planAfterAttempt, type AttemptPlan } from "../../domain/webhook-retry.ts";
import { endpointWants, type DispatchResult } from "../../domain/webhooks.ts";
import type { SystemContext } from "../context.ts";
import { recordEvent } from "../events/record-event.ts";
import { openEndpointSecrets } from "./endpoint-secrets.ts";
import { deliveryHeaders } from "./sign-delivery.ts";
import { fetchTransport } from "./transport.ts";
import { resolveDeliveryTarget } from "./webhook-target.ts";

export interface DispatchInput {
  /** Claim deliveries due at this time (default: the clock's now). */
  now?: Date;
  /** At most this many deliveries are sent (default: config.webhooks.claimBatch). */
  limit?: number;
  /** Jitter source, in [0, 1); injected by tests. */
  random?: () => number;
}

export type DispatchOutcome = DispatchResult & {
  /** A batch was full: more work is probably waiting, so call again now. */
  more: boolean;
};

export async function dispatchWebhooks({ ctx, input = {} }: { ctx: SystemContext; input?: DispatchInput }): Promise<DispatchOutcome> {
  const settings = ctx.config.webhooks;
  const now = input.now ?? ctx.clock.now();
  const limit = input.limit ?? settings.claimBatch;
  const fanout = await fanOut(ctx, now);
  // The lease runs from the claim, not from the start of the pass (fan-out may have taken a while).
  const claimedAt = input.now ?? ctx.clock.now();
  const claimed = await claimDueDeliveries(ctx.db, {
    now: claimedAt,
    leaseUntil: new Date(claimedAt.getTime() + settings.leaseSeconds * 1000),
    token: crypto.randomUUID(),
    limit,
    perEndpoint: settings.endpointConcurrency,
  });
  const succeeded = (await Promise.all(claimed.map((delivery) => attemptDelivery(ctx, delivery, input.random)))).filter(Boolean).length;
  return {
    fannedOut: fanout.created,
    attempted: claimed.length,
    succeeded,
    failed: claimed.length - succeeded,
    more: fanout.full || claimed.length === limit || hitEndpointCap(claimed, settings.endpointConcurrency),
  };
}

function hitEndpointCap(claimed: ClaimedDelivery[], cap: number): boolean {
  const perEndpoint = new Map<string, number>();
  for (const { endpointId } of claimed) perEndpoint.set(endpointId, (perEndpoint.get(endpointId) ?? 0) + 1);
  return [...perEndpoint.values()].some((count) => count >= cap);
}

async function fanOut(ctx: SystemContext, now: Date): Promise<{ created: number; full: boolean }> {
  const batch = ctx.config.webhooks.fanoutBatch;
  return ctx.db.transaction(async (tx) => {
    const cursor = await lockFanoutCursor(tx, batch);
    if (!cursor || cursor.heads.length === 0) return { created: 0, full: false };
    const rows: NewDeliveryRow[] = [];
    for (const event of cursor.heads) {
      for (const endpoint of cursor.endpoints) {
        if (!endpointWants(endpoint, event)) continue;
        rows.push({
          id: newId("delivery"),
          endpointId: endpoint.id,
          eventId: event.id,
          eventType: event.type,
          status: "pending",
          nextAttemptAt: now,
          runAttempts: 0,
          createdAt: now,
        });
      }
    }
    const created = await writeFanout(tx, rows, cursor.heads[cursor.heads.length - 1]!.seq);
    return { created, full: cursor.heads.length === batch };
  });
}

/** One attempt of one claimed delivery; resolves to whether the receiver answered 2xx. */
async function attemptDelivery(ctx: SystemContext, delivery: ClaimedDelivery, random?: () => number): Promise<boolean> {
  const settings = ctx.config.webhooks;
  const transport = ctx.webhookTransport ?? fetchTransport;
  const attemptedAt = ctx.clock.now();
  const started = performance.now();
  let statusCode: number | undefined;
  let retryAfterSeconds: number | undefined;
  let responseSnippet: string | null = null;
  let error: string | null = null;
  let latencyMs: number | undefined;
  try {
    const target = await resolveDeliveryTarget(ctx, delivery.url);
    const body = JSON.stringify({ type: delivery.eventType, timestamp: delivery.occurredAt.toISOString(), data: delivery.data });
    const open = await openEndpointSecrets(ctx, { ...delivery, id: delivery.endpointId });
    const previousLive = open.previousSecret && delivery.previousSecretExpiresAt && delivery.previousSecretExpiresAt > attemptedAt;
    const secrets = previousLive ? [open.secret, open.previousSecret!] : [open.secret];
    const response = await transport.send({
      url: target.url,
      address: target.address,
      headers: deliveryHeaders(secrets, delivery.eventId, attemptedAt, body),
      body,
      timeoutMs: settings.timeoutMs,
    });
    statusCode = response.status;
    latencyMs = response.latencyMs;
    responseSnippet = response.bodySnippet || null;
    retryAfterSeconds = parseRetryAfter(response.headers["retry-after"], attemptedAt);
    if (statusCode >= 300 && statusCode < 400) {
      error = `redirects are not followed${response.headers.location ? ` (Location: ${response.headers.location.slice(0, 200)})` : ""}`;
    }
  } catch (caught) {
    // A class only: the runtime's text would tell viewers which hosts and ports answer (docs/design.md §14.7).
    error = classifyAttemptFailure(caught);
  }
  latencyMs ??= performance.now() - started;

  const plan = planAfterAttempt({
    outcome: { statusCode, retryAfterSeconds },
    runAttempts: delivery.runAttempts + 1,
    schedule: settings.retryScheduleSeconds,
    now: attemptedAt,
    failingSince: delivery.failingSince,
    disableAfterMs: settings.disableAfterFailingMs,
    random,
  });
  const moved = await recordAttempt(ctx.db, {
    deliveryId: delivery.id,
    leaseToken: delivery.leaseToken,
    attemptedAt,
    statusCode: statusCode ?? null,
    latencyMs: Math.round(latencyMs),
    responseSnippet,
    error,
    status: plan.delivery.status,
    nextAttemptAt: plan.delivery.status === "pending" ? plan.delivery.nextAttemptAt : null,
  });
  if (moved) await applyEndpointHealth(ctx, delivery, plan, attemptedAt, { statusCode, error });
  return isSuccess(statusCode);
}

/** Writes the endpoint's failure record only when it changes, and disables it when the plan says so. */
async function applyEndpointHealth(
  ctx: SystemContext,
  delivery: ClaimedDelivery,
  plan: AttemptPlan,
  now: Date,
  last: { statusCode?: number; error: string | null },
): Promise<void> {
  if (plan.disable) {
    const reason = plan.disable;
    await ctx.db.transaction(async (tx) => {
      const row = await disableWebhookEndpoint(tx, delivery.endpointId, reason, now);
      if (!row) return; // already disabled, by another attempt or by hand: one event is enough
      if (!row.failingSince && plan.failingSince) await setWebhookEndpointFailing(tx, row.id, plan.failingSince, now);
      await recordEvent(tx, now, {
        type: "webhook.disabled",
        projectId: row.projectId,
        data: {
          webhook: { id: row.id, url: row.url, ...(row.projectId ? { projectId: row.projectId } : {}) },
          reason,
          ...(plan.failingSince ? { failingSince: plan.failingSince.toISOString() } : {}),
          lastAttempt: {
            ...(last.statusCode !== undefined ? { statusCode: last.statusCode } : {}),
            ...(last.error ? { error: last.error } : {}),
          },
        },
      });
    });
    return;
  }
  const wasFailing = delivery.failingSince !== null;
  const isFailing = plan.failingSince !== null;
  if (wasFailing !== isFailing) await setWebhookEndpointFailing(ctx.db, delivery.endpointId, plan.failingSince, now);
}
