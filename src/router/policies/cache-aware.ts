// cache_aware (after SGLang's router): send a prompt where its longest prefix was sent
// before, so the engine's prefix cache hits. With loads L over the candidates:
//   imbalanced ⇔ max(L) − min(L) > balanceAbsThreshold ∧ max(L) > min(L) × balanceRelThreshold
//   imbalanced → least load (ties round-robin);
//   else match = longest prefix a candidate holds, rate = matched ÷ prompt length;
//        rate ≥ cacheThreshold → the least-loaded holder of that prefix (a hit),
//        else → least load, ties round-robin (a miss).
// Every pick is then recorded in the bounded prefix tree for the chosen endpoint.
import { PrefixTree } from "../prefix-tree.ts";
import { leastLoadedIndex, TieBreaker } from "./least-load.ts";
import type { Candidate, Pick, Policy, RouteInput } from "./types.ts";

export interface CacheAwareOptions {
  /** Share of the prompt that must match for a hit (0–1). */
  cacheThreshold: number;
  /** Absolute in-flight spread past which the policy balances load instead. */
  balanceAbsThreshold: number;
  /** Relative spread (busiest > idlest × this) that must also hold. */
  balanceRelThreshold: number;
  /** Memory bound of the prefix tree, in prompt characters. */
  maxTreeChars: number;
  /** Match granularity in characters (tests use small blocks). */
  blockChars?: number;
}

export const CACHE_AWARE_DEFAULTS = {
  cacheThreshold: 0.5,
  balanceAbsThreshold: 64,
  balanceRelThreshold: 1.5,
  maxTreeChars: 8 * 1024 * 1024,
} as const satisfies CacheAwareOptions;

export class CacheAware implements Policy {
  readonly name = "cache_aware";
  readonly tree: PrefixTree;
  private readonly ties = new TieBreaker();
  private indexOf = new Map<string, number>();
  private indexedFor: readonly Candidate[] | null = null;

  constructor(private readonly options: CacheAwareOptions) {
    this.tree = new PrefixTree({ maxChars: options.maxTreeChars, blockChars: options.blockChars });
  }

  pick(candidates: readonly Candidate[], input: RouteInput): Pick {
    const text = input.text();
    const chosen = this.choose(candidates, text);
    this.tree.insert(text, candidates[chosen.index]!.id);
    return chosen;
  }

  forget(id: string): void {
    this.tree.removeTenant(id);
  }

  private choose(candidates: readonly Candidate[], text: string): Pick {
    if (this.isImbalanced(candidates)) {
      return { index: leastLoadedIndex(candidates, this.ties.next()), decision: "imbalance" };
    }
    const indexOf = this.indexFor(candidates);
    const match = this.tree.match(text, (tenant) => indexOf.has(tenant));
    const length = this.tree.indexedLength(text);
    if (length > 0 && match.tenants.length > 0 && match.matchedChars / length >= this.options.cacheThreshold) {
      const holders = match.tenants.map((tenant) => indexOf.get(tenant)!);
      const best = leastLoadedIndex(
        holders.map((index) => candidates[index]!),
        this.ties.next(),
      );
      return { index: holders[best]!, decision: "cache_hit" };
    }
    return { index: leastLoadedIndex(candidates, this.ties.next()), decision: "cache_miss" };
  }

  private isImbalanced(candidates: readonly Candidate[]): boolean {
    let max = -Infinity;
    let min = Infinity;
    for (const candidate of candidates) {
      if (candidate.inFlight > max) max = candidate.inFlight;
      if (candidate.inFlight < min) min = candidate.inFlight;
    }
    return max - min > this.options.balanceAbsThreshold && max > min * this.options.balanceRelThreshold;
  }

  /** id → position, rebuilt only when the registry hands over a different candidate array. */
  private indexFor(candidates: readonly Candidate[]): Map<string, number> {
    if (candidates !== this.indexedFor) {
      this.indexOf = new Map(candidates.map((candidate, index) => [candidate.id, index]));
      this.indexedFor = candidates;
    }
    return this.indexOf;
  }
}
