// The router's Prometheus metrics (own registry, prefix berth_router_): responses and
// upstream errors by endpoint and status, in-flight per endpoint (read at scrape time, free
// on the hot path), TTFT and duration at the router, policy decisions, retries, holds.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { EndpointRegistry } from "./endpoints.ts";
import type { Decision } from "./policies/index.ts";

export type UpstreamErrorReason =
  | "connect"
  | "status_5xx"
  | "scaling"
  | "mid_stream"
  | "timeout"
  | "bad_prefill_answer";

export class RouterMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<"endpoint" | "status">;
  private readonly errors: Counter<"endpoint" | "reason" | "status">;
  private readonly retries: Counter<"endpoint" | "reason">;
  private readonly decisions: Counter<"role" | "policy" | "decision" | "endpoint">;
  private readonly ttft: Histogram<"endpoint">;
  private readonly duration: Histogram<"endpoint">;

  constructor(endpoints: EndpointRegistry, held: () => number, defaultMetrics = true) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: "berth_router_requests_total",
      help: "Responses sent to clients, by the endpoint that produced them (empty for the router's own errors) and HTTP status.",
      labelNames: ["endpoint", "status"],
      registers,
    });
    this.errors = new Counter({
      name: "berth_router_upstream_errors_total",
      help: "Failed upstream attempts by endpoint, reason (connect, status_5xx, scaling, mid_stream, timeout, bad_prefill_answer) and the upstream's HTTP status (empty when it never answered).",
      labelNames: ["endpoint", "reason", "status"],
      registers,
    });
    this.retries = new Counter({
      name: "berth_router_retries_total",
      help: "Requests re-sent after a failed attempt, by the endpoint that failed and why.",
      labelNames: ["endpoint", "reason"],
      registers,
    });
    this.decisions = new Counter({
      name: "berth_router_policy_decisions_total",
      help: "Routing decisions by role, policy, decision (e.g. cache_hit, cache_miss, imbalance) and chosen endpoint.",
      labelNames: ["role", "policy", "decision", "endpoint"],
      registers,
    });
    this.ttft = new Histogram({
      name: "berth_router_ttft_seconds",
      help: "Time from the request's arrival to the first response byte from the upstream that answers the client.",
      labelNames: ["endpoint"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80],
      registers,
    });
    this.duration = new Histogram({
      name: "berth_router_request_duration_seconds",
      help: "Time from the request's arrival to the end of its response.",
      labelNames: ["endpoint"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    new Gauge({
      name: "berth_router_in_flight_requests",
      help: "Requests in flight per endpoint (the count the agent drains on).",
      labelNames: ["endpoint", "role", "state"],
      registers,
      collect() {
        this.reset();
        for (const endpoint of endpoints.list()) {
          this.set({ endpoint: endpoint.id, role: endpoint.role, state: endpoint.state }, endpoint.inFlight);
        }
      },
    });
    new Gauge({
      name: "berth_router_held_requests",
      help: "Requests held while a role has no endpoints (scale-to-zero mode).",
      registers,
      collect() {
        this.set(held());
      },
    });
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: "berth_router_" });
  }

  response(endpoint: string, status: number): void {
    this.requests.inc({ endpoint, status: String(status) });
  }

  upstreamError(endpoint: string, reason: UpstreamErrorReason, status?: number): void {
    this.errors.inc({ endpoint, reason, status: status === undefined ? "" : String(status) });
  }

  retry(endpoint: string, reason: UpstreamErrorReason): void {
    this.retries.inc({ endpoint, reason });
  }

  decision(role: string, policy: string, decision: Decision, endpoint: string): void {
    this.decisions.inc({ role, policy, decision, endpoint });
  }

  firstByte(endpoint: string, seconds: number): void {
    this.ttft.observe({ endpoint }, seconds);
  }

  finished(endpoint: string, seconds: number): void {
    this.duration.observe({ endpoint }, seconds);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
