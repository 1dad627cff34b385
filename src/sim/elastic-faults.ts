// The simulator's own elastic-EP fault injection (not vLLM's): SIM_ELASTIC_FAULT names what the
// size-changing `/scale_elastic_ep` calls do, counted from the first one since start. Pure: parsing and
// the per-call plan; elastic.ts keeps the count and carries the plan out.

/** What SIM_ELASTIC_FAULT asks for. */
export interface ElasticFaults {
  /** `hang-first`: the first size-changing call scales but never answers; `hang-first-noop`: it neither scales nor answers. */
  firstCall?: "hang-first" | "hang-first-noop";
  /** How many size-changing calls, from the first, answer 500 `Scale failed` without scaling (`refuse`: all). */
  refusedCalls: number;
}

export const NO_ELASTIC_FAULTS: ElasticFaults = { refusedCalls: 0 };

/** One size-changing call: scale and answer, scale and stay silent, stay silent, or refuse. */
export type ScaleCallPlan = "scale" | "scale-silently" | "stay-silent" | "refuse";

/** Reads the comma-separated entries; unknown or conflicting ones come back in `ignored` with the reason. */
export function parseElasticFaults(value: string | undefined): { faults: ElasticFaults; ignored: string[] } {
  const faults: ElasticFaults = { ...NO_ELASTIC_FAULTS };
  const ignored: string[] = [];
  const entries = (value ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  for (const entry of entries) {
    const refuseFirst = /^refuse-first=(\d+)$/.exec(entry);
    if (entry === "hang-first" || entry === "hang-first-noop") {
      if (faults.firstCall !== undefined && faults.firstCall !== entry) ignored.push(`${entry} (conflicts with ${faults.firstCall})`);
      else faults.firstCall = entry;
    } else if (entry === "refuse") {
      faults.refusedCalls = Number.POSITIVE_INFINITY;
    } else if (refuseFirst) {
      faults.refusedCalls = Math.max(faults.refusedCalls, Number(refuseFirst[1]));
    } else {
      ignored.push(`${entry} (unknown; expected hang-first, hang-first-noop, refuse or refuse-first=N)`);
    }
  }
  return { faults, ignored };
}

/** The plan for the size-changing call number `index` (0 = the first): a hang-first entry owns call 0, refusals count from it. */
export function planScaleCall(faults: ElasticFaults, index: number): ScaleCallPlan {
  if (index === 0 && faults.firstCall === "hang-first") return "scale-silently";
  if (index === 0 && faults.firstCall === "hang-first-noop") return "stay-silent";
  return index < faults.refusedCalls ? "refuse" : "scale";
}
