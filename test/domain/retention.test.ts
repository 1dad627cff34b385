// The pure retention decisions: cut-offs per window, how far webhooks let the event log be
// purged, whether a cursor fell behind the horizon; and the windows read from the environment.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/api/config.ts";
import { cursorIsGone, DEFAULT_RETENTION_WINDOWS, eventPurgeCeiling, retentionCutoffs, type FanoutPosition } from "../../src/domain/retention.ts";

const NOW = new Date("2026-12-01T00:00:00.000Z");
const HOUR = 3_600_000;

describe("retentionCutoffs", () => {
  it.each([
    { hours: 168, cutoff: new Date(NOW.getTime() - 168 * HOUR) },
    { hours: 1, cutoff: new Date(NOW.getTime() - HOUR) },
    { hours: null, cutoff: null },
  ])("a window of $hours hours cuts at $cutoff", ({ hours, cutoff }) => {
    const windows = { eventsHours: hours, tombstonesHours: hours, deliveriesHours: hours, operationsHours: hours };
    expect(retentionCutoffs(NOW, windows)).toEqual({ events: cutoff, tombstones: cutoff, deliveries: cutoff, operations: cutoff });
  });

  it("keeps each table to its own window by default", () => {
    const cutoffs = retentionCutoffs(NOW, DEFAULT_RETENTION_WINDOWS);
    expect(cutoffs.events).toEqual(new Date(NOW.getTime() - 7 * 24 * HOUR));
    expect(cutoffs.tombstones).toEqual(new Date(NOW.getTime() - 7 * 24 * HOUR));
    expect(cutoffs.deliveries).toEqual(new Date(NOW.getTime() - 30 * 24 * HOUR));
    expect(cutoffs.operations).toEqual(new Date(NOW.getTime() - 30 * 24 * HOUR));
  });
});

describe("eventPurgeCeiling", () => {
  const none: FanoutPosition = { cursorSeq: null, oldestEndpointStartSeq: null, oldestPendingSeq: null };
  it.each<[string, FanoutPosition, number | null]>([
    ["no webhooks at all: no limit", none, null],
    ["the fan-out cursor: up to the last event fanned out", { ...none, cursorSeq: 40 }, 40],
    ["no cursor yet: up to where the oldest endpoint starts", { ...none, oldestEndpointStartSeq: 12 }, 12],
    ["the cursor wins over endpoint starts once it exists", { cursorSeq: 40, oldestEndpointStartSeq: 12, oldestPendingSeq: null }, 40],
    ["a pending delivery: short of its event", { cursorSeq: 40, oldestEndpointStartSeq: 1, oldestPendingSeq: 25 }, 24],
    ["a pending delivery past the cursor: the cursor", { cursorSeq: 40, oldestEndpointStartSeq: 1, oldestPendingSeq: 90 }, 40],
    ["a pending delivery of the first event: nothing", { ...none, oldestPendingSeq: 1 }, 0],
  ])("%s", (_, position, ceiling) => {
    expect(eventPurgeCeiling(position)).toBe(ceiling);
  });
});

describe("cursorIsGone", () => {
  it.each([
    { cursor: 0, horizon: 0, gone: false },
    { cursor: 0, horizon: 500, gone: false },
    { cursor: 499, horizon: 500, gone: true },
    { cursor: 1, horizon: 500, gone: true },
    { cursor: 500, horizon: 500, gone: false },
    { cursor: 501, horizon: 500, gone: false },
    { cursor: 7, horizon: 0, gone: false },
  ])("after $cursor with the log purged through $horizon: gone=$gone", ({ cursor, horizon, gone }) => {
    expect(cursorIsGone(cursor, horizon)).toBe(gone);
  });
});

describe("retention configuration", () => {
  it("defaults to the documented windows", () => {
    expect(parseConfig({}).retentionWindows).toEqual(DEFAULT_RETENTION_WINDOWS);
  });

  it("reads hours and never", () => {
    const config = parseConfig({
      BERTH_RETENTION_EVENTS_HOURS: "48",
      BERTH_RETENTION_TOMBSTONES_HOURS: "never",
      BERTH_RETENTION_DELIVERIES_HOURS: "1",
      BERTH_RETENTION_OPERATIONS_HOURS: "87600",
    });
    expect(config.retentionWindows).toEqual({ eventsHours: 48, tombstonesHours: null, deliveriesHours: 1, operationsHours: 87_600 });
  });

  it.each(["0", "-1", "1.5", "87601", "forever", "7d"])("names a bad value %j", (value) => {
    expect(() => parseConfig({ BERTH_RETENTION_EVENTS_HOURS: value })).toThrow(/BERTH_RETENTION_EVENTS_HOURS: hours \(1–87600\) or "never"/);
  });
});
