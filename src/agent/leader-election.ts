// Leader election on a coordination.k8s.io/v1 Lease, decided as client-go's leaderelection does
// (https://pkg.go.dev/k8s.io/client-go/tools/leaderelection): a record is expired when this process
// has not seen it change for its leaseDurationSeconds (local time only: the other host's clock and
// the record's renewTime are never compared with ours); a leader that has not renewed within
// renewDeadline stops leading. Pure: the caller reads and writes the Lease (lease-elector.ts).

/** The spec fields of a Lease that election reads and writes (times are MicroTime strings). */
export interface LeaseRecord {
  holderIdentity?: string | null;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseDurationSeconds?: number | null;
  leaseTransitions?: number | null;
}

export interface ElectionTimings {
  /** How long a standby waits, from when it last saw the record change, before taking over. */
  leaseDurationMs: number;
  /** How long a leader keeps trying to renew before it stops leading. */
  renewDeadlineMs: number;
  /** The pause between two tries (acquire or renew). */
  retryPeriodMs: number;
}

/** client-go's and controller-runtime's defaults: 15 s, 10 s, 2 s. */
export const DEFAULT_ELECTION_TIMINGS: ElectionTimings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** client-go's validation of a LeaderElectionConfig: duration > deadline > retry × JitterFactor (1.2) > 0. */
export function timingProblem({ leaseDurationMs, renewDeadlineMs, retryPeriodMs }: ElectionTimings): string | undefined {
  if (!(retryPeriodMs > 0)) return "the retry period must be greater than zero";
  if (!(leaseDurationMs > renewDeadlineMs)) return "the lease duration must be greater than the renew deadline";
  if (!(renewDeadlineMs > 1.2 * retryPeriodMs)) return "the renew deadline must be greater than 1.2 × the retry period";
  return undefined;
}

/** The record as this process last saw it and the local time it first saw it in that form. */
export interface Observation {
  key: string;
  holder: string;
  /** Local milliseconds (the record's own times are another host's clock). */
  at: number;
  durationMs: number;
}

const keyOf = (record: LeaseRecord) =>
  JSON.stringify([record.holderIdentity ?? "", record.acquireTime ?? "", record.renewTime ?? "", record.leaseDurationSeconds ?? 0, record.leaseTransitions ?? 0]);

/** The new observation: unchanged (same `at`) while the record is the same, else now. */
export function observe(previous: Observation | undefined, record: LeaseRecord, now: number, timings: ElectionTimings): Observation {
  const key = keyOf(record);
  if (previous?.key === key) return previous;
  const seconds = record.leaseDurationSeconds;
  return { key, holder: record.holderIdentity ?? "", at: now, durationMs: seconds && seconds > 0 ? seconds * 1000 : timings.leaseDurationMs };
}

export type ElectionDecision =
  /** No Lease yet: create it naming us. */
  | { action: "create"; record: LeaseRecord }
  /** Released or expired: take it over (one more transition). */
  | { action: "acquire"; record: LeaseRecord; previousHolder: string }
  /** Ours: refresh renewTime, keep acquireTime and the transition count. */
  | { action: "renew"; record: LeaseRecord }
  /** Someone else holds a live Lease: look again in `retryInMs`. */
  | { action: "wait"; leader: string; retryInMs: number }
  /** We were leading and may no longer act as leader. */
  | { action: "lost"; reason: string };

export interface ElectionInput {
  identity: string;
  /** The Lease's spec as just read; undefined when there is none. */
  record: LeaseRecord | undefined;
  /** `observe(…)` of that record (undefined with no record). */
  observation: Observation | undefined;
  now: number;
  /** Local time of our last successful create/acquire/renew while leading; undefined when not leading. */
  lastRenewedAt: number | undefined;
  timings: ElectionTimings;
  /** The wall clock for the MicroTimes written (the local clock, only ever compared by people). */
  wallNow: number;
}

/** metav1.MicroTime's encoding: RFC 3339 with six fraction digits, UTC (what kube-apiserver accepts). */
export const microTime = (ms: number) => new Date(ms).toISOString().replace(/Z$/, "000Z");

export function decideElection({ identity, record, observation, now, lastRenewedAt, timings, wallNow }: ElectionInput): ElectionDecision {
  const leading = lastRenewedAt !== undefined;
  if (leading && now - lastRenewedAt > timings.renewDeadlineMs) {
    return { action: "lost", reason: `not renewed for ${now - lastRenewedAt} ms (renew deadline ${timings.renewDeadlineMs} ms)` };
  }
  const leaseDurationSeconds = Math.ceil(timings.leaseDurationMs / 1000);
  const stamp = microTime(wallNow);
  if (!record || !observation) {
    // A leader whose Lease was deleted under it cannot know who else saw the gap: it stops.
    if (leading) return { action: "lost", reason: "the Lease is gone" };
    return { action: "create", record: { holderIdentity: identity, acquireTime: stamp, renewTime: stamp, leaseDurationSeconds, leaseTransitions: 0 } };
  }
  const holder = record.holderIdentity ?? "";
  if (holder === identity) {
    return {
      action: "renew",
      record: { holderIdentity: identity, acquireTime: record.acquireTime ?? stamp, renewTime: stamp, leaseDurationSeconds, leaseTransitions: record.leaseTransitions ?? 0 },
    };
  }
  const expiresAt = observation.at + observation.durationMs;
  if (holder !== "" && now < expiresAt) {
    // client-go would keep retrying until its renew deadline; a leader that sees another holder
    // already knows it lost, so it stops at once rather than act beside the new one.
    if (leading) return { action: "lost", reason: `the Lease is held by ${holder}` };
    return { action: "wait", leader: holder, retryInMs: Math.max(1, Math.min(timings.retryPeriodMs, expiresAt - now)) };
  }
  if (leading) return { action: "lost", reason: holder === "" ? "the Lease was released" : `the Lease names ${holder}` };
  return {
    action: "acquire",
    previousHolder: holder,
    record: { holderIdentity: identity, acquireTime: stamp, renewTime: stamp, leaseDurationSeconds, leaseTransitions: (record.leaseTransitions ?? 0) + 1 },
  };
}

/** client-go's ReleaseOnCancel record: no holder, a one-second duration, so a standby takes over on its next look. */
export function releasedRecord(record: LeaseRecord, wallNow: number): LeaseRecord {
  const stamp = microTime(wallNow);
  return { holderIdentity: null, acquireTime: stamp, renewTime: stamp, leaseDurationSeconds: 1, leaseTransitions: record.leaseTransitions ?? 0 };
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration as controller-runtime's `--leader-elect-*` flags take it ("15s", "500ms", "1m30s"); undefined when malformed or not positive. */
export function parseDuration(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(text)) return undefined;
  let ms = 0;
  for (const [, value, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(value) * DURATION_UNITS[unit!]!;
  return ms > 0 ? ms : undefined;
}
