// round_robin: each pick takes the next candidate in turn. The cursor keeps running when
// the candidate set changes, so a change only shifts the rotation, never stalls it.
import type { Candidate, Pick, Policy } from "./types.ts";

export class RoundRobin implements Policy {
  readonly name = "round_robin";
  private cursor = 0;

  pick(candidates: readonly Candidate[]): Pick {
    const index = this.cursor % candidates.length;
    this.cursor = (this.cursor + 1) % 0x40000000;
    return { index, decision: "round_robin" };
  }

  forget(): void {}
}
