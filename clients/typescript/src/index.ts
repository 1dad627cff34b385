// The berth TypeScript client: generated types (schema.ts) plus a small hand-written layer.
export {
  createApiClient,
  createBerthClient,
  etagOf,
  type BerthClient,
  type BerthClientOptions,
  type Deployment,
  type DeploymentWatchNotice,
  type Event,
  type EventType,
  type ListInit,
  type ListItem,
  type ListPath,
  type Revision,
  type StreamEventsOptions,
  type WatchDeploymentsOptions,
} from "./client.ts";
export { BerthApiError, describeProblemError, isProblem, unwrap, type Problem, type ProblemError } from "./errors.ts";
export type { FollowOptions } from "./follow.ts";
export { retryingFetch, retryAfterMs, type Fetch, type RetryOptions } from "./retry.ts";
export { parseSse, type SseMessage } from "./sse.ts";
export type { components, operations, paths } from "./schema.ts";
