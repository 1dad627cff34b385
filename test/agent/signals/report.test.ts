// The report as the API takes it (`DeploymentMetricsInput`, PUT /v1/agent/deployments/{id}/metrics)
// (aggregated roles pass the API's own schema) and the routers' held total. The autoscaler's view
// of a report is src/domain/scaling-signals.ts roleSignalsFromReport (tested there).
import { describe, expect, it } from "vitest";
import { aggregateRoles } from "../../../src/agent/signals/aggregate.ts";
import { computeInterval } from "../../../src/agent/signals/interval.ts";
import { routerSignalsByRole, totalHeld } from "../../../src/agent/signals/router.ts";
import { DeploymentMetricsInput } from "../../../src/domain/metrics.ts";
import { aPod, aSample } from "./support.ts";

const T0 = Date.parse("2026-11-30T12:00:00.000Z");
const podA = aPod({ uid: "a", name: "chat-server-r0-m0" });
const podB = aPod({ uid: "b", name: "chat-server-r1-m0" });
const reading = (held: number) => ({ router: { uid: "r", name: "chat-router-0" }, at: T0, view: { held, endpoints: [{ id: podA.name, role: "server", state: "eligible", inFlight: 2 }] } });

function report() {
  const busy = computeInterval(aSample(T0 - 10_000, {}, { pod: podA }), aSample(T0, { requestsSucceeded: 120, ttft: { sum: 12, count: 120 }, promptTokens: 12_000, generationTokens: 24_000 }, { pod: podA }));
  const extra = routerSignalsByRole({ readings: [reading(0)], failures: [{ router: { uid: "r2", name: "chat-router-1" }, detail: "refused" }], roles: [{ name: "server", kind: "server" }], podRoles: new Map(), now: T0 });
  return aggregateRoles({ roles: ["server"], intervals: [busy], failures: [{ pod: podB, reason: "unreachable", detail: "timeout" }], extra, now: T0 });
}

describe("the metrics report", () => {
  it("passes the API's DeploymentMetricsInput schema", () => {
    const body = { observedAt: new Date(T0).toISOString(), roles: report() };
    const parsed = DeploymentMetricsInput.safeParse(body);
    expect(parsed.success ? "ok" : parsed.error.issues).toBe("ok");
    expect(body.roles[0]!.signals.map((signal) => signal.name)).toEqual([
      "requests_running",
      "requests_waiting",
      "kv_cache_usage",
      "requests_per_second",
      "prompt_tokens_per_second",
      "generation_tokens_per_second",
      "prompt_tokens_per_request",
      "generation_tokens_per_request",
      "ttft_mean",
      "itl_mean",
      "queue_time_mean",
      "router_in_flight",
      "router_held",
    ]);
  });

  it("totals held requests over the router replicas that answered", () => {
    expect(totalHeld([reading(2), reading(3)])).toBe(5);
    expect(totalHeld([])).toBeUndefined();
  });
});
