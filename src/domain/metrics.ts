// A deployment's latest aggregated engine signals, as the agent scraped them (docs/design.md §7.1):
// per role, each signal with the number of pods it sums over, and what could not be read
// and why. A value nobody observed is absent and listed under `missing`, never 0.
import { z } from "zod";
import { strictObject } from "./deployment-spec.ts";
import { LIMITS, boundedInt, counter, timestamp } from "./limits.ts";

const SIGNAL_NAME = /^[a-z][a-z0-9_:.]*$/;

const SignalName = z
  .string()
  .min(1)
  .max(128)
  .regex(SIGNAL_NAME, { error: "must be lower-case letters, digits, '_', ':' or '.', e.g. requests_waiting" })
  .describe("What is measured, e.g. `requests_running`, `requests_waiting`, `kv_cache_usage`, `ttft_p90`, `itl_p90`.");

export const MetricSignal = strictObject({
  name: SignalName,
  value: z.number().finite().describe("The role's aggregate (a sum for counts, a mean for ratios, a quantile over the pooled histogram for latencies); absent when no pod reported it.").optional(),
  unit: z.string().min(1).max(32).describe("e.g. `requests`, `ratio`, `ms`, `tokens/s`."),
  podCount: boundedInt(0, 1_000_000).describe("How many pods the value aggregates."),
  samples: counter()
    .describe("For an interval mean: the observations it averages (requests for `ttft_mean` and `queue_time_mean`, tokens for `itl_mean`).")
    .optional(),
  observedAt: timestamp().describe("When the newest sample in the value was read."),
}).meta({ id: "MetricSignal" });
export type MetricSignal = z.infer<typeof MetricSignal>;

export const MissingSignal = strictObject({
  name: SignalName,
  pod: z.string().min(1).max(253).describe("The pod that could not be read; absent when no pod of the role exposes it.").optional(),
  reason: z.string().min(1).max(1024).describe("Why, e.g. `scrape timed out after 2 s`, `metric not exposed (SGLang without --enable-metrics)`."),
}).meta({ id: "MissingSignal" });
export type MissingSignal = z.infer<typeof MissingSignal>;

export const RoleMetrics = strictObject({
  name: z.string().min(1).max(63).describe("A role of the deployment."),
  signals: z.array(MetricSignal).max(256),
  missing: z.array(MissingSignal).max(4096).describe("Signals, or pods, that could not be read this round."),
}).meta({ id: "RoleMetrics" });
export type RoleMetrics = z.infer<typeof RoleMetrics>;

export const DeploymentMetricsInput = strictObject({
  observedAt: timestamp().describe("When this round of scraping ended."),
  roles: z.array(RoleMetrics).max(16).describe("One entry per role scraped."),
}).meta({ id: "DeploymentMetricsInput" });
export type DeploymentMetricsInput = z.infer<typeof DeploymentMetricsInput>;

export const DeploymentMetrics = z
  .object({
    deploymentId: z.string().max(LIMITS.id),
    observedAt: timestamp().describe("When the agent scraped them."),
    receivedAt: timestamp().describe("When the API stored them."),
    roles: z.array(RoleMetrics).max(16),
  })
  .meta({ id: "DeploymentMetrics" });
export type DeploymentMetrics = z.infer<typeof DeploymentMetrics>;
