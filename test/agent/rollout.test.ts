// planRollout (pure): the LeaderWorkerSet-style rolling update with maxSurge, one step at a time.
// Instances are written as one letter per replica index: N new and Ready, n new and starting, p new
// and waiting for a node, O old (stale) and Ready, o old and never Ready, H old with only some
// members Ready (multi-host), - no instance (absent or terminating).
import { describe, expect, it } from "vitest";
import { planRollout, type RolloutInput, type RolloutInstance } from "../../src/agent/rollout.ts";

function instances(layout: string, podsPerInstance = 1): RolloutInstance[] {
  return [...layout].flatMap((code, replica): RolloutInstance[] => {
    if (code === "-") return [];
    const current = code === "N" || code === "n" || code === "p";
    const ready = code === "N" || code === "O";
    const serving = ready || code === "H";
    return [{ replica, current, ready, serving, scheduled: code === "p" ? 0 : podsPerInstance }];
  });
}

/** A compact view: what is created, kept, retired and deleted, and the condition. */
function step(input: Partial<RolloutInput> & { layout: string }) {
  const { layout, ...rest } = input;
  const podsPerInstance = rest.podsPerInstance ?? 1;
  const plan = planRollout({
    desired: 1,
    strategy: { maxSurge: 1, maxUnavailable: 0 },
    podsPerInstance,
    gpusPerPod: 1,
    freeGpus: [8],
    ...rest,
    instances: instances(layout, podsPerInstance),
  });
  return {
    create: plan.create,
    keep: plan.keep,
    retire: plan.retire ?? null,
    deleteNow: plan.deleteNow,
    condition: `${plan.condition.status} ${plan.condition.reason}: ${plan.condition.message}`,
  };
}

const SURGE1 = { maxSurge: 1, maxUnavailable: 0 };

describe("planRollout", () => {
  it.each<[string, Partial<RolloutInput> & { layout: string }, ReturnType<typeof step>]>([
    // One replica, surge 1: create r1 at the new revision, wait for it, retire r0, recreate r0, then r1 is surplus.
    ["1 replica: the surge starts", { layout: "O" }, { create: 2, keep: [1], retire: null, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
    ["1 replica: the old one stays while the surge starts", { layout: "On" }, { create: 2, keep: [1], retire: null, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
    ["1 replica: the surge is Ready, the old one retires", { layout: "ON" }, { create: 2, keep: [1], retire: 0, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
    ["1 replica: while r0 is recreated the surge is kept", { layout: "-N" }, { create: 1, keep: [1], retire: null, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
    ["1 replica: r0 starting, the surge still kept", { layout: "nN" }, { create: 1, keep: [1], retire: null, deleteNow: [], condition: "True AllUpdated: 1/1 updated" }],
    ["1 replica: r0 Ready, the surge is surplus", { layout: "NN" }, { create: 1, keep: [], retire: null, deleteNow: [], condition: "True AllUpdated: 1/1 updated" }],
    ["converged", { layout: "N" }, { create: 1, keep: [], retire: null, deleteNow: [], condition: "True AllUpdated: 1/1 updated" }],
    // No room: one at a time (maxUnavailable effectively 1), said in the condition.
    [
      "the surge does not fit: the old one retires first",
      { layout: "O", freeGpus: [0] },
      { create: 1, keep: [], retire: 0, deleteNow: [], condition: "False SurgeDoesNotFit: 0/1 updated; a surge of 1 instance(s) needs 1 GPUs (1 pod(s) × 1), 0 free; replacing one instance at a time" },
    ],
    [
      "a surge left waiting for a node when the room went is not kept",
      { layout: "Op", freeGpus: [0] },
      { create: 1, keep: [], retire: 0, deleteNow: [], condition: "False SurgeDoesNotFit: 0/1 updated; a surge of 1 instance(s) needs 1 GPUs (1 pod(s) × 1), 0 free; replacing one instance at a time" },
    ],
    [
      "a missing instance below replicas takes the room first",
      { layout: "O-", desired: 2, freeGpus: [1] },
      { create: 2, keep: [], retire: null, deleteNow: [], condition: "False SurgeDoesNotFit: 0/2 updated; a surge of 1 instance(s) needs 2 GPUs (2 pod(s) × 1), 1 free; replacing one instance at a time" },
    ],
    [
      "without an inventory yet nothing is chosen",
      { layout: "O", freeGpus: undefined },
      { create: 1, keep: [], retire: null, deleteNow: [], condition: "False RollingOut: 0/1 updated; waiting for the cluster's GPU inventory to size the surge" },
    ],
    ["a surge already placed needs no inventory", { layout: "ON", freeGpus: undefined }, { create: 2, keep: [1], retire: 0, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
    // maxUnavailable 1, surge 0: the classic one at a time, only while the others are Ready.
    ["surge 0 unavailable 1: highest first", { layout: "OOO", desired: 3, strategy: { maxSurge: 0, maxUnavailable: 1 } }, { create: 3, keep: [], retire: 2, deleteNow: [], condition: "False RollingOut: 0/3 updated" }],
    ["surge 0 unavailable 1: not while one is starting", { layout: "OOn", desired: 3, strategy: { maxSurge: 0, maxUnavailable: 1 } }, { create: 3, keep: [], retire: null, deleteNow: [], condition: "False RollingOut: 1/3 updated" }],
    ["surge 0 unavailable 1: the next once it is Ready", { layout: "OON", desired: 3, strategy: { maxSurge: 0, maxUnavailable: 1 } }, { create: 3, keep: [], retire: 1, deleteNow: [], condition: "False RollingOut: 1/3 updated" }],
    // Three replicas, surge 1.
    ["3 replicas: the surge starts at r3", { layout: "OOO", desired: 3 }, { create: 4, keep: [3], retire: null, deleteNow: [], condition: "False RollingOut: 0/3 updated" }],
    ["3 replicas: r3 Ready, r2 retires", { layout: "OOON", desired: 3 }, { create: 4, keep: [3], retire: 2, deleteNow: [], condition: "False RollingOut: 0/3 updated" }],
    ["3 replicas: r2 recreated, nothing more until it is Ready", { layout: "OO-N", desired: 3 }, { create: 4, keep: [3], retire: null, deleteNow: [], condition: "False RollingOut: 0/3 updated" }],
    ["3 replicas: r2 Ready, r1 retires", { layout: "OONN", desired: 3 }, { create: 4, keep: [3], retire: 1, deleteNow: [], condition: "False RollingOut: 1/3 updated" }],
    ["3 replicas: surge 2 unavailable 1 may go below replicas", { layout: "OOO", desired: 3, strategy: { maxSurge: 2, maxUnavailable: 1 } }, { create: 5, keep: [3, 4], retire: 2, deleteNow: [], condition: "False RollingOut: 0/3 updated" }],
    // An old instance that never served is deleted directly, whatever the floor.
    ["a stale instance that never became Ready goes now", { layout: "OoON", desired: 3 }, { create: 4, keep: [3], retire: null, deleteNow: [1], condition: "False RollingOut: 0/3 updated" }],
    ["only never-Ready stale instances: all go now", { layout: "oo", desired: 2 }, { create: 3, keep: [2], retire: null, deleteNow: [1, 0], condition: "False RollingOut: 0/2 updated" }],
    // The spec changed again mid-rollout: the surge (now stale too) is the highest stale one.
    ["changed again: the Ready surge of the previous revision retires first", { layout: "OO" }, { create: 2, keep: [1], retire: 1, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
    ["changed again: a replaced instance still starting at the previous revision goes now", { layout: "OOoN", desired: 3 }, { create: 4, keep: [3], retire: null, deleteNow: [2], condition: "False RollingOut: 0/3 updated" }],
    ["a stale surplus left after the rollout is said", { layout: "NO" }, { create: 1, keep: [], retire: null, deleteNow: [], condition: "False RollingOut: 1/1 updated; r1 at an earlier revision leave" }],
    // Multi-host, size 2 × 4 GPUs: the surge needs two pods of 4 GPUs, each on one node.
    ["size 2: the surge fits on two nodes", { layout: "O", podsPerInstance: 2, gpusPerPod: 4, freeGpus: [4, 4] }, { create: 2, keep: [1], retire: null, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
    [
      "size 2: 8 GPUs free but split 6 + 2 hold only one pod",
      { layout: "O", podsPerInstance: 2, gpusPerPod: 4, freeGpus: [6, 2] },
      { create: 1, keep: [], retire: 0, deleteNow: [], condition: "False SurgeDoesNotFit: 0/1 updated; a surge of 1 instance(s) needs 8 GPUs (2 pod(s) × 4), 8 free; replacing one instance at a time" },
    ],
    ["size 2: an old instance with one member Ready is not whole: it may go", { layout: "HN", podsPerInstance: 2 }, { create: 2, keep: [1], retire: 0, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
    ["size 2: the surge Ready, the old one retires", { layout: "ON", podsPerInstance: 2, gpusPerPod: 4, freeGpus: [0] }, { create: 2, keep: [1], retire: 0, deleteNow: [], condition: "False RollingOut: 0/1 updated" }],
  ])("%s", (_name, input, expected) => {
    expect(step({ strategy: SURGE1, ...input })).toEqual(expected);
  });

  it("never lets the Ready count drop below replicas - maxUnavailable, over a whole rollout", () => {
    // Walk a 3-replica rollout to the end, applying each step as the cluster would (a retired
    // instance vanishes, a created one becomes Ready on the next step), and check the floor.
    let layout = "OOO";
    const seen: string[] = [layout];
    for (let i = 0; i < 20 && layout !== "NNN"; i++) {
      const plan = planRollout({ desired: 3, strategy: SURGE1, instances: instances(layout), podsPerInstance: 1, gpusPerPod: 1, freeGpus: [8] });
      const cells = [...layout.padEnd(plan.create, "-")];
      for (let r = 0; r < plan.create; r++) if (cells[r] === "-") cells[r] = "N";
      if (plan.retire !== undefined) cells[plan.retire] = "-";
      // Surplus beyond what the plan creates or keeps leaves (the scale-down path).
      for (let r = 3; r < cells.length; r++) if (r >= plan.create && !plan.keep.includes(r)) cells[r] = "-";
      layout = cells.join("").replace(/-+$/, "");
      seen.push(layout);
      expect([...layout].filter((c) => c === "N" || c === "O").length).toBeGreaterThanOrEqual(3);
    }
    expect(seen).toEqual(["OOO", "OOON", "OO-N", "OONN", "O-NN", "ONNN", "-NNN", "NNNN", "NNN"]);
  });
});
