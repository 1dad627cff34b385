// session_affinity: requests carrying the same session key (`x-session-id`, else `user`)
// go to the same endpoint, chosen by a consistent-hash ring over the eligible endpoints;
// an endpoint that drains or leaves moves only its own sessions, one that joins takes
// about 1/(n+1) of them. Requests without a key go to the least-loaded endpoint.
import { HashRing } from "../consistent-hash.ts";
import { leastLoadedIndex, TieBreaker } from "./least-load.ts";
import type { Candidate, Pick, Policy, RouteInput } from "./types.ts";

export class SessionAffinity implements Policy {
  readonly name = "session_affinity";
  private readonly ties = new TieBreaker();
  private ring = new HashRing([]);
  private ringFor: readonly Candidate[] | null = null;

  constructor(private readonly virtualNodes?: number) {}

  pick(candidates: readonly Candidate[], input: RouteInput): Pick {
    if (input.sessionKey === undefined || input.sessionKey === "") {
      return { index: leastLoadedIndex(candidates, this.ties.next()), decision: "no_session" };
    }
    const owner = this.ringOver(candidates).lookup(input.sessionKey);
    const index = candidates.findIndex((candidate) => candidate.id === owner);
    return { index: index < 0 ? 0 : index, decision: "session" };
  }

  forget(): void {}

  /** The ring is rebuilt only when the set of candidate ids changes. */
  private ringOver(candidates: readonly Candidate[]): HashRing {
    if (candidates === this.ringFor) return this.ring;
    const ids = candidates.map((candidate) => candidate.id);
    const same =
      ids.length === this.ring.members.length && ids.every((id) => this.ring.members.includes(id));
    if (!same) this.ring = new HashRing(ids, this.virtualNodes);
    this.ringFor = candidates;
    return this.ring;
  }
}
