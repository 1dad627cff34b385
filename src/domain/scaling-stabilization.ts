// Scale-down stabilization (HPA's `behavior.scaleDown.stabilizationWindowSeconds`, with an
// immediate scale-up) and the one-retirement-at-a-time rule. Pure state → state': the caller keeps
// RoleScalingState between evaluations; losing it only delays a scale-down by one window.
import type { LimitedBy, RoleScalingState } from "./scaling-signals.ts";

const ms = (iso: string) => Date.parse(iso);

/**
 * Appends this evaluation's (bounded) recommendation and drops entries older than the window.
 * `since` starts the unbroken run of evaluations; a gap longer than both the window and two
 * intervals (the agent stopped, or metrics were missing throughout) starts a new run, so a
 * scale-down again needs a whole window of evidence.
 */
export function recordRecommendation(
  previous: RoleScalingState | undefined,
  now: string,
  replicas: number,
  windowSeconds: number,
  intervalSeconds: number,
): RoleScalingState {
  const t = ms(now);
  const lastAt = previous?.history.at(-1)?.at ?? previous?.lastAt;
  const gap = lastAt === undefined ? Infinity : t - ms(lastAt);
  const broken = previous === undefined || gap > Math.max(windowSeconds, 2 * intervalSeconds) * 1000;
  const kept = broken ? [] : previous.history.filter((h) => ms(h.at) > t - windowSeconds * 1000);
  return {
    ...previous,
    since: broken ? now : previous.since,
    lastAt: now,
    history: [...kept, { at: now, replicas }],
  };
}

export interface Stabilized {
  desired: number;
  limitedBy?: LimitedBy;
  message?: string;
}

/**
 * Scale-up acts at once. Scale-down to the highest recommendation of the last window, and only
 * once the run of evaluations covers a whole window: a single high sample inside the window holds
 * the count up (HPA: desired = max over the window, capped at current). No scale-down starts while
 * a retirement is in flight.
 */
export function stabilize(input: {
  current: number;
  recommended: number;
  state: RoleScalingState;
  now: string;
  windowSeconds: number;
  retirementInFlight: boolean;
}): Stabilized {
  const { current, recommended, state } = input;
  if (recommended >= current) return { desired: recommended };
  const covered = (ms(input.now) - ms(state.since)) / 1000;
  if (covered < input.windowSeconds) {
    return {
      desired: current,
      limitedBy: "Stabilization",
      message: `scale-down to ${recommended} waits: ${Math.floor(covered)} s of the ${input.windowSeconds} s window observed`,
    };
  }
  const windowMax = Math.max(recommended, ...state.history.map((h) => h.replicas));
  const desired = Math.min(current, windowMax);
  if (desired === current) {
    return { desired, limitedBy: "Stabilization", message: `a recommendation of ${windowMax} within the last ${input.windowSeconds} s holds ${current}` };
  }
  if (input.retirementInFlight) {
    return { desired: current, limitedBy: "RetirementInFlight", message: `scale-down to ${desired} waits for the retirement in flight` };
  }
  if (desired > recommended) {
    return { desired, limitedBy: "Stabilization", message: `a recommendation of ${windowMax} within the last ${input.windowSeconds} s holds ${desired}` };
  }
  return { desired };
}
