// least_load: the candidate with the fewest in-flight requests; ties go round-robin (the
// scan starts one further along on each pick), so idle endpoints share work evenly.
import type { Candidate, Pick, Policy } from "./types.ts";

/** Index of the least-loaded candidate, scanning from `start` so ties rotate. */
export function leastLoadedIndex(candidates: readonly Candidate[], start: number): number {
  const count = candidates.length;
  let best = start % count;
  let bestLoad = candidates[best]!.inFlight;
  for (let step = 1; step < count; step++) {
    const index = (start + step) % count;
    const load = candidates[index]!.inFlight;
    if (load < bestLoad) {
      best = index;
      bestLoad = load;
    }
  }
  return best;
}

/** A rotating start position for tie-breaks, shared by the policies that fall back to least load. */
export class TieBreaker {
  private cursor = 0;
  next(): number {
    const value = this.cursor;
    this.cursor = (this.cursor + 1) % 0x40000000;
    return value;
  }
}

export class LeastLoad implements Policy {
  readonly name = "least_load";
  private readonly ties = new TieBreaker();

  pick(candidates: readonly Candidate[]): Pick {
    return { index: leastLoadedIndex(candidates, this.ties.next()), decision: "least_load" };
  }

  forget(): void {}
}
