// The contract every routing policy meets: given the eligible endpoints of one role (with
// their live in-flight counts) and what the request offers to route on, pick one. Policies
// do no I/O and read no clock, so a table of inputs fully determines their answers.

export const POLICY_NAMES = ["round_robin", "least_load", "cache_aware", "session_affinity"] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

export interface Candidate {
  readonly id: string;
  readonly inFlight: number;
  /** Data-parallel engines behind the endpoint (absent = 1): least load compares inFlight ÷ ranks. */
  readonly ranks?: number | undefined;
}

export interface RouteInput {
  /** Prompt text (cache_aware); computed lazily, only for policies that ask for it. */
  text(): string;
  /** `x-session-id` header, else the request's `user` field (session_affinity). */
  sessionKey: string | undefined;
}

export type Decision =
  | "round_robin"
  | "least_load"
  | "cache_hit"
  | "cache_miss"
  | "imbalance"
  | "session"
  | "no_session";

export interface Pick {
  /** Index into the candidates passed in. */
  index: number;
  decision: Decision;
}

export interface Policy {
  readonly name: PolicyName;
  /** `candidates` is never empty. */
  pick(candidates: readonly Candidate[], input: RouteInput): Pick;
  /** An endpoint left the configuration: drop whatever the policy remembers about it. */
  forget(id: string): void;
}
