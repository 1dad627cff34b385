// Time is injected so tests can move it (idempotency expiry, heartbeats) without sleeping.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
