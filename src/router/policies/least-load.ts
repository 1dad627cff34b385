// least_load: the candidate with the lowest load = inFlight ÷ ranks (ranks absent = 1), so an
// endpoint fronting N data-parallel engines takes N times the share of one; ties go
// round-robin (the scan starts one further along on each pick), so idle endpoints share evenly.
import type { Candidate, Pick, Policy } from "./types.ts";

/** Index of the least-loaded candidate, scanning from `start` so ties rotate. */
export function leastLoadedIndex(candidates: readonly Candidate[], start: number): number {
  const count = candidates.length;
  let best = start % count;
  let bestLoad = loadOf(candidates[best]!);
  for (let step = 1; step < count; step++) {
    const index = (start + step) % count;
    const load = loadOf(candidates[index]!);
    if (load < bestLoad) {
      best = index;
      bestLoad = load;
    }
  }
  return best;
}

/** In-flight requests per data-parallel rank; equal ratios divide to equal doubles, so ties stay ties. */
function loadOf(candidate: Candidate): number {
  return candidate.ranks === undefined ? candidate.inFlight : candidate.inFlight / candidate.ranks;
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
