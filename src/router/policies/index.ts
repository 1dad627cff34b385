// Builds a policy by name; the router keeps one instance per endpoint role, so prefill,
// decode and encode pools each keep their own rotation, prefix tree and ring.
import { CacheAware, type CacheAwareOptions } from "./cache-aware.ts";
import { LeastLoad } from "./least-load.ts";
import { RoundRobin } from "./round-robin.ts";
import { SessionAffinity } from "./session-affinity.ts";
import type { Policy, PolicyName } from "./types.ts";

export type { Candidate, Decision, Pick, Policy, PolicyName, RouteInput } from "./types.ts";
export { POLICY_NAMES } from "./types.ts";

export function createPolicy(name: PolicyName, cacheAware: CacheAwareOptions): Policy {
  switch (name) {
    case "round_robin":
      return new RoundRobin();
    case "least_load":
      return new LeastLoad();
    case "cache_aware":
      return new CacheAware(cacheAware);
    case "session_affinity":
      return new SessionAffinity();
  }
}
