// Retention (docs/design.md §14.5): how long each growing table keeps its rows, and the pure
// decisions around a purge — the age cut-off of each table, how far the event log may be
// purged without losing a webhook delivery, and whether a reader's cursor fell behind it.

/** Hours each table keeps rows; null keeps them forever (nothing is purged). */
export interface RetentionWindows {
  /** BERTH_RETENTION_EVENTS_HOURS: the event log (list, stream, webhook payloads). */
  eventsHours: number | null;
  /** BERTH_RETENTION_TOMBSTONES_HOURS: deleted deployments, read by watchers and agents resuming. */
  tombstonesHours: number | null;
  /** BERTH_RETENTION_DELIVERIES_HOURS: finished webhook deliveries and their attempts (the delivery log). */
  deliveriesHours: number | null;
  /** BERTH_RETENTION_OPERATIONS_HOURS: operations in a terminal phase. */
  operationsHours: number | null;
}

/**
 * Events and tombstones: 7 days, so a watcher, a webhook-less consumer of the log or an agent
 * that was away for a week resumes without a 410. Deliveries and operations: 30 days, the
 * usual horizon for "what happened to that call last month".
 */
export const DEFAULT_RETENTION_WINDOWS: RetentionWindows = {
  eventsHours: 7 * 24,
  tombstonesHours: 7 * 24,
  deliveriesHours: 30 * 24,
  operationsHours: 30 * 24,
};

/** The longest window accepted: ten years (beyond that, say "never"). */
export const MAX_RETENTION_HOURS = 87_600;

/** The streams whose purge a cursor can fall behind; each keeps a horizon row. */
export type RetentionStream = "events" | "deployment_tombstones";

export interface RetentionCutoffs {
  events: Date | null;
  tombstones: Date | null;
  deliveries: Date | null;
  operations: Date | null;
}

/** Rows older than the cut-off (strictly) may go; null: keep everything. */
export function retentionCutoffs(now: Date, windows: RetentionWindows): RetentionCutoffs {
  const cut = (hours: number | null) => (hours === null ? null : new Date(now.getTime() - hours * 3_600_000));
  return {
    events: cut(windows.eventsHours),
    tombstones: cut(windows.tombstonesHours),
    deliveries: cut(windows.deliveriesHours),
    operations: cut(windows.operationsHours),
  };
}

/** What the webhook dispatcher still needs from the event log. */
export interface FanoutPosition {
  /** The fan-out cursor's last seq; null while no dispatcher has created it. */
  cursorSeq: number | null;
  /** The smallest startSeq of any endpoint (where a cursor not yet created would start); null: no endpoint. */
  oldestEndpointStartSeq: number | null;
  /** The smallest seq of an event some pending delivery still has to send; null: none. */
  oldestPendingSeq: number | null;
}

/**
 * The largest seq the event log may be purged through (null: no limit from webhooks). Events the
 * fan-out has not reached yet, and the event of any pending delivery, must stay: a delivery is
 * sent from its event's row.
 */
export function eventPurgeCeiling(position: FanoutPosition): number | null {
  const bounds: number[] = [];
  if (position.cursorSeq !== null) bounds.push(position.cursorSeq);
  else if (position.oldestEndpointStartSeq !== null) bounds.push(position.oldestEndpointStartSeq);
  if (position.oldestPendingSeq !== null) bounds.push(position.oldestPendingSeq - 1);
  return bounds.length === 0 ? null : Math.max(0, Math.min(...bounds));
}

/**
 * Whether a reader resuming after `cursor` may have missed purged rows. 0 means "from the
 * start": such a reader knew nothing, so it misses nothing it could have relied on. At or
 * past the horizon every later row is still there.
 */
export function cursorIsGone(cursor: number, purgedThrough: number): boolean {
  return cursor > 0 && cursor < purgedThrough;
}
