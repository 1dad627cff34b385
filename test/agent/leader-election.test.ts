// The pure leader election decision (client-go's semantics): expiry counted on this process's clock
// from when it last saw the record change, takeover with one more transition, renewals keeping
// acquireTime, a leader that stops at once when it sees another holder or passes its renew deadline.
import { describe, expect, it } from "vitest";
import {
  decideElection,
  DEFAULT_ELECTION_TIMINGS,
  type ElectionInput,
  type LeaseRecord,
  microTime,
  observe,
  parseDuration,
  releasedRecord,
  timingProblem,
} from "../../src/agent/leader-election.ts";
import { runBerth } from "../support/berth-process.ts";

const T = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };
const WALL = Date.parse("2026-12-02T06:00:00.000Z");
const STAMP = "2026-12-02T06:00:00.000000Z";
const theirs = (extra: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: "agent-b",
  acquireTime: "2026-12-02T05:00:00.000000Z",
  renewTime: "2026-12-02T05:59:59.000000Z",
  leaseDurationSeconds: 3,
  leaseTransitions: 4,
  ...extra,
});

/** A decision for `record` first seen at local time `seenAt`, decided at `now`. */
function decide(record: LeaseRecord | undefined, { seenAt = 0, now = 0, lastRenewedAt }: { seenAt?: number; now?: number; lastRenewedAt?: number } = {}) {
  const input: ElectionInput = {
    identity: "agent-a",
    record,
    observation: record ? observe(undefined, record, seenAt, T) : undefined,
    now,
    lastRenewedAt,
    timings: T,
    wallNow: WALL,
  };
  return decideElection(input);
}

describe("decideElection", () => {
  it.each([
    ["no Lease: create it naming us, transitions 0", undefined, {}, { action: "create", record: { holderIdentity: "agent-a", acquireTime: STAMP, renewTime: STAMP, leaseDurationSeconds: 3, leaseTransitions: 0 } }],
    ["held by another, seen 1 s ago: wait until its expiry at most a retry period", theirs(), { seenAt: 0, now: 1_000 }, { action: "wait", leader: "agent-b", retryInMs: 500 }],
    ["held by another, 200 ms before expiry: look again exactly at expiry", theirs(), { seenAt: 0, now: 2_800 }, { action: "wait", leader: "agent-b", retryInMs: 200 }],
    [
      "held by another, unchanged for its lease duration: take over, one more transition",
      theirs(),
      { seenAt: 0, now: 3_000 },
      { action: "acquire", previousHolder: "agent-b", record: { holderIdentity: "agent-a", acquireTime: STAMP, renewTime: STAMP, leaseDurationSeconds: 3, leaseTransitions: 5 } },
    ],
    [
      "the record's own duration counts (a 10 s lease is not expired after 3 s)",
      theirs({ leaseDurationSeconds: 10 }),
      { seenAt: 0, now: 3_000 },
      { action: "wait", leader: "agent-b", retryInMs: 500 },
    ],
    [
      "released (no holder): take over at once",
      theirs({ holderIdentity: "" }),
      { seenAt: 0, now: 0 },
      { action: "acquire", previousHolder: "", record: { holderIdentity: "agent-a", acquireTime: STAMP, renewTime: STAMP, leaseDurationSeconds: 3, leaseTransitions: 5 } },
    ],
    [
      "ours: renew, keeping acquireTime and transitions",
      theirs({ holderIdentity: "agent-a" }),
      { seenAt: 0, now: 400, lastRenewedAt: 0 },
      { action: "renew", record: { holderIdentity: "agent-a", acquireTime: "2026-12-02T05:00:00.000000Z", renewTime: STAMP, leaseDurationSeconds: 3, leaseTransitions: 4 } },
    ],
    ["leading but not renewed within the renew deadline: lost", theirs({ holderIdentity: "agent-a" }), { now: 2_001, lastRenewedAt: 0 }, { action: "lost", reason: "not renewed for 2001 ms (renew deadline 2000 ms)" }],
    ["leading and the Lease names another: lost at once", theirs(), { now: 100, lastRenewedAt: 0 }, { action: "lost", reason: "the Lease is held by agent-b" }],
    ["leading and the Lease is gone: lost", undefined, { now: 100, lastRenewedAt: 0 }, { action: "lost", reason: "the Lease is gone" }],
    ["leading and the Lease was released by someone else: lost", theirs({ holderIdentity: "" }), { now: 100, lastRenewedAt: 0 }, { action: "lost", reason: "the Lease was released" }],
  ] as const)("%s", (_what, record, at, expected) => {
    expect(decide(record as LeaseRecord | undefined, at)).toEqual(expected);
  });

  it("never compares the other host's renewTime with the local clock: a renewTime far in the past is not expiry", () => {
    const stale = theirs({ renewTime: "2001-01-01T00:00:00.000000Z" });
    expect(decide(stale, { seenAt: 10_000, now: 10_001 }).action).toBe("wait");
  });
});

describe("observe", () => {
  it("keeps the first time a record was seen while it does not change, and restarts the clock on any change", () => {
    const first = observe(undefined, theirs(), 100, T);
    expect(observe(first, theirs(), 5_000, T)).toBe(first);
    const renewed = observe(first, theirs({ renewTime: "2026-12-02T06:00:01.000000Z" }), 5_000, T);
    expect(renewed.at).toBe(5_000);
    expect(renewed.durationMs).toBe(3_000);
    // A record without a duration falls back to ours.
    expect(observe(undefined, theirs({ leaseDurationSeconds: null }), 0, T).durationMs).toBe(3_000);
  });

  it("a standby that keeps seeing renewals never takes over; once they stop it does, a lease duration after the last one", () => {
    let observation = observe(undefined, theirs(), 0, T);
    for (let now = 500; now <= 10_000; now += 500) {
      observation = observe(observation, theirs({ renewTime: `renewed at ${now}` }), now, T);
      expect(decideElection({ identity: "agent-a", record: theirs(), observation, now, lastRenewedAt: undefined, timings: T, wallNow: WALL }).action).toBe("wait");
    }
    const last = observation;
    expect(decideElection({ identity: "agent-a", record: theirs(), observation: last, now: 12_999, lastRenewedAt: undefined, timings: T, wallNow: WALL }).action).toBe("wait");
    expect(decideElection({ identity: "agent-a", record: theirs(), observation: last, now: 13_000, lastRenewedAt: undefined, timings: T, wallNow: WALL }).action).toBe("acquire");
  });
});

describe("releasedRecord and microTime", () => {
  it("releases as client-go's ReleaseOnCancel: no holder, one second, transitions kept", () => {
    expect(releasedRecord(theirs({ holderIdentity: "agent-a" }), WALL)).toEqual({ holderIdentity: null, acquireTime: STAMP, renewTime: STAMP, leaseDurationSeconds: 1, leaseTransitions: 4 });
  });

  it("writes MicroTime with six fraction digits in UTC", () => {
    expect(microTime(Date.parse("2026-12-02T06:00:00.123Z"))).toBe("2026-12-02T06:00:00.123000Z");
  });
});

describe("timings", () => {
  it.each([
    [DEFAULT_ELECTION_TIMINGS, undefined],
    [T, undefined],
    [{ leaseDurationMs: 2_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 }, "the lease duration must be greater than the renew deadline"],
    [{ leaseDurationMs: 3_000, renewDeadlineMs: 1_000, retryPeriodMs: 1_000 }, "the renew deadline must be greater than 1.2 × the retry period"],
    [{ leaseDurationMs: 3_000, renewDeadlineMs: 1_000, retryPeriodMs: 0 }, "the retry period must be greater than zero"],
  ])("%j → %s", (timings, problem) => {
    expect(timingProblem(timings)).toBe(problem);
  });

  it.each([
    ["15s", 15_000],
    ["500ms", 500],
    ["1m30s", 90_000],
    ["1.5s", 1_500],
    ["2h", 7_200_000],
    ["0s", undefined],
    ["15", undefined],
    ["-1s", undefined],
    ["s", undefined],
    ["1d", undefined],
  ])("parseDuration(%j) = %s", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});

describe("berth agent --leader-elect flags", () => {
  const base = ["agent", "--api", "http://127.0.0.1:9", "--token", "ba_x", "--leader-elect"];
  it.each([
    [["--leader-elect-lease-duration", "15"], '--leader-elect-lease-duration must be a positive duration such as 15s or 500ms (got "15")'],
    [["--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "2s"], "--leader-elect-*: the lease duration must be greater than the renew deadline"],
    [["--leader-elect-retry-period", "9s"], "--leader-elect-*: the renew deadline must be greater than 1.2 × the retry period"],
  ])("%j is a usage error (exit 2) naming the flag", async (flags, message) => {
    const result = await runBerth([...base, ...flags], {}, { timeoutMs: 60_000 });
    expect(result.stderr).toContain(message);
    expect(result.code).toBe(2);
  }, 70_000);
});
