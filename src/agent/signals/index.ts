// The agent's signals layer (docs/design.md §7.1): engine and router reads → per-role signals.
export { aggregateRoles, type AggregateInput, type ExtraRoleSignals, type ScrapeFailure } from "./aggregate.ts";
export { readEngineIdentity, readEngineValues, type EngineIdentity, type EngineName, type EngineValues, type HistogramTotals } from "./engine.ts";
export { ExpositionError, parseExposition, type Exposition, type Family, type MetricType, type Sample } from "./exposition.ts";
export { computeInterval, detectReset, meanMs, type EngineSample, type PodInterval, type ResetCause } from "./interval.ts";
export { parseAdminView, readRouters, routerSignalsByRole, totalHeld, type AdminView, type RouterPod, type RouterReading, type RouterFailure } from "./router.ts";
export { scrapePods, type EnginePod, type ScrapeOptions, type ScrapeResult } from "./scrape.ts";
export * from "./signals.ts";
