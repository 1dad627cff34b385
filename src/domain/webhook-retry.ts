// What happens after a delivery attempt: a pure planner from the attempt's outcome and
// the delivery's progress through the retry schedule to its next state, plus what the
// endpoint's failure record becomes. The dispatcher only executes the plan.
//
// Delay before retry n (n = 1…): schedule[n-1] × a jitter factor in [0.9, 1.1], raised to
// the receiver's Retry-After when that is longer, but never past the longest step of the
// schedule (a receiver cannot park a delivery for a week). After the last step the
// delivery is failed. 410 Gone fails it at once and disables the endpoint; an endpoint
// whose attempts have kept failing for `disableAfterMs` (3 days) is disabled too.

/** docs/design.md §10: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h — 27.6 h in all. */
export const DEFAULT_RETRY_SCHEDULE_SECONDS: readonly number[] = [5, 300, 1800, 7200, 18000, 36000, 36000];
export const JITTER = 0.1;

/** Parses BERTH_WEBHOOK_RETRY_SCHEDULE: comma-separated seconds, each > 0 and at most a week. */
export function parseRetrySchedule(text: string): number[] {
  const steps = text.split(",").map((part) => part.trim());
  if (steps.length > 30) throw new Error("at most 30 retries");
  return steps.map((step) => {
    const seconds = Number(step);
    if (step === "" || !Number.isFinite(seconds) || seconds <= 0 || seconds > 7 * 24 * 3600) {
      throw new Error(`"${step}" is not a number of seconds between 0 and 604800`);
    }
    return seconds;
  });
}

/** Retry-After as delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, (at - now.getTime()) / 1000);
}

export interface AttemptOutcome {
  /** The receiver's status; absent when no response arrived (refused, timeout, connection error). */
  statusCode?: number;
  retryAfterSeconds?: number;
}

export type DeliveryStep =
  | { status: "succeeded" }
  | { status: "pending"; nextAttemptAt: Date }
  | { status: "failed" };

export interface AttemptPlan {
  delivery: DeliveryStep;
  /** The endpoint's failure record after this attempt: null = healthy, a date = failing since then. */
  failingSince: Date | null;
  /** Set when the endpoint must be disabled now, with the reason recorded on it. */
  disable?: "gone" | "failing";
}

export interface PlanInput {
  outcome: AttemptOutcome;
  /** Attempts made in this run of the delivery including this one (a redelivery starts a new run). */
  runAttempts: number;
  schedule: readonly number[];
  now: Date;
  /** The endpoint's failure record before this attempt. */
  failingSince: Date | null;
  disableAfterMs: number;
  /** In [0, 1); injected for tests. */
  random?: () => number;
}

export function isSuccess(statusCode: number | undefined): boolean {
  return statusCode !== undefined && statusCode >= 200 && statusCode < 300;
}

export function planAfterAttempt(input: PlanInput): AttemptPlan {
  const { outcome, now } = input;
  if (isSuccess(outcome.statusCode)) return { delivery: { status: "succeeded" }, failingSince: null };
  const failingSince = input.failingSince ?? now;
  if (outcome.statusCode === 410) return { delivery: { status: "failed" }, failingSince, disable: "gone" };
  const disable = now.getTime() - failingSince.getTime() >= input.disableAfterMs ? ("failing" as const) : undefined;
  const delay = retryDelaySeconds(input);
  const delivery: DeliveryStep =
    delay === undefined || disable ? { status: "failed" } : { status: "pending", nextAttemptAt: new Date(now.getTime() + delay * 1000) };
  return disable ? { delivery, failingSince, disable } : { delivery, failingSince };
}

/** Seconds until the next retry, or undefined when the schedule is used up. */
export function retryDelaySeconds(input: Pick<PlanInput, "outcome" | "runAttempts" | "schedule" | "random">): number | undefined {
  const step = input.schedule[input.runAttempts - 1];
  if (step === undefined) return undefined;
  const random = input.random ?? Math.random;
  const jittered = step * (1 - JITTER + 2 * JITTER * random());
  const ceiling = Math.max(...input.schedule);
  const asked = input.outcome.retryAfterSeconds;
  return asked !== undefined && asked > jittered ? Math.min(asked, ceiling) : jittered;
}
