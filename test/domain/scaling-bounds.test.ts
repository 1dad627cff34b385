import { describe, expect, it } from "vitest";
import type { DeploymentSpec } from "../../src/domain/deployment-spec.ts";
import { applyPdRatio, clampAutoscalerReplicas, clampReplicas, fitCapacity, ratioHolds } from "../../src/domain/scaling-bounds.ts";

const side = (desired: number, current = desired, min = 1, max = 100) => ({ desired, current, min, max });

describe("min/max", () => {
  it.each([
    [5, 1, 10, 5, undefined],
    [12, 1, 10, 10, "MaxReplicas"],
    [0, 2, 10, 2, "MinReplicas"],
    [0, 0, 10, 0, undefined],
  ])("%d within [%d, %d] → %d (%s)", (replicas, min, max, expected, limitedBy) => {
    expect(clampReplicas(replicas, min, max)).toEqual({ replicas: expected, ...(limitedBy && { limitedBy }) });
  });
});

describe("prefill:decode ratio", () => {
  it.each([
    // prefill, decode, ratio, expected prefill, decode, moved
    [side(1), side(8), [0.5, 2], 4, 8, ["prefill"]], // p raised to ⌈0.5 × 8⌉
    [side(9), side(2), [0.5, 2], 9, 5, ["decode"]], // d raised to ⌈9 ÷ 2⌉
    [side(3), side(3), [0.5, 2], 3, 3, []],
    [side(0), side(0), [0.5, 2], 0, 0, []], // both at zero
    [side(0), side(1), [0.25, 4], 1, 1, ["prefill"]], // scale from zero together
    [side(1, 1, 1, 2), side(8, 4), [0.5, 2], 2, 4, ["prefill", "decode"]], // p capped at max 2: d's scale-up cut to 4
    [side(1, 1, 1, 1), side(8, 6), [0.5, 2], 1, 6, ["decode"]], // cut back, never below current: ratio cannot hold
    [side(3), side(10), [0.3, 3], 3, 10, []], // 0.3 × 10 = 3.0000000000000004 still holds
  ])("%j : %j within %j → %d : %d", (p, d, [min, max], ep, ed, moved) => {
    const r = applyPdRatio(p, d, { min: min!, max: max! });
    expect([r.prefill, r.decode]).toEqual([ep, ed]);
    expect(r.moved).toEqual(moved);
    expect(r.holds).toBe(ratioHolds(ep, ed, { min: min!, max: max! }));
  });

  it("holds for every pair the min/max allow", () => {
    for (let p = 0; p <= 12; p++) {
      for (let d = 0; d <= 12; d++) {
        const r = applyPdRatio(side(p, 0, 0, 64), side(d, 0, 0, 64), { min: 0.25, max: 4 });
        expect(r.holds).toBe(true);
        expect(r.prefill).toBeGreaterThanOrEqual(p);
        expect(r.decode).toBeGreaterThanOrEqual(d);
      }
    }
  });
});

describe("capacity", () => {
  const role = (name: string, current: number, desired: number, gpusPerReplica: number, gpuType?: string) => ({ name, current, desired, gpusPerReplica, ...(gpuType && { gpuType }) });

  it.each([
    // roles, capacity, expected desired, limitedBy of each short role
    [[role("a", 2, 5, 2)], {}, { a: 5 }, {}],
    [[role("a", 2, 5, 2)], { quotaGpusLeft: 4 }, { a: 4 }, { a: "Quota" }],
    [[role("a", 2, 5, 2, "nvidia-h100-80gb")], { freeGpus: { "nvidia-h100-80gb": 3 } }, { a: 3 }, { a: "InsufficientGPU" }],
    [[role("a", 2, 5, 2, "nvidia-h100-80gb")], { freeGpus: { "nvidia-l4-24gb": 16 } }, { a: 2 }, { a: "InsufficientGPU" }],
    [[role("a", 2, 5, 2)], { freeGpus: { "nvidia-h100-80gb": 3, "nvidia-l4-24gb": 3 } }, { a: 5 }, {}], // any type: the sum
    [[role("a", 2, 5, 2)], { quotaGpusLeft: 100, freeGpus: { "nvidia-h100-80gb": 0 } }, { a: 2 }, { a: "InsufficientGPU" }],
    [[role("a", 5, 2, 2)], { quotaGpusLeft: 0, freeGpus: {} }, { a: 2 }, {}], // scale-down needs nothing
    [[role("a", 1, 3, 1), role("b", 1, 2, 4)], { quotaGpusLeft: 5 }, { a: 2, b: 2 }, { a: "Quota" }], // b gets 4, a the rest
  ])("%j with %j → %j", (roles, capacity, expected, limits) => {
    const r = fitCapacity(roles, capacity);
    expect(r.desired).toEqual(expected);
    expect(Object.fromEntries(r.shortages.map((s) => [s.role, s.limitedBy]))).toEqual(limits);
  });

  it("prefers the cut that keeps the prefill:decode ratio, then the largest scale-up", () => {
    const roles = [role("prefill", 1, 4, 1), role("decode", 4, 5, 1)];
    const keeps = (d: Readonly<Record<string, number>>) => ratioHolds(d.prefill!, d.decode!, { min: 0.8, max: 1 });
    // (4,5) → decode first, since (3,5) would break 0.8 → then prefill is the only scale-up left.
    expect(fitCapacity(roles, { quotaGpusLeft: 2 }, keeps).desired).toEqual({ prefill: 3, decode: 4 });
    // Without a ratio the largest scale-up gives way.
    expect(fitCapacity(roles, { quotaGpusLeft: 2 }).desired).toEqual({ prefill: 2, decode: 5 });
  });
});

describe("the autoscaler's replicas write within the roles' bounds", () => {
  // Only the fields the rule reads; the rest of a spec does not matter to it.
  const spec = (replicas: Record<string, number>, bounds: Record<string, [number, number]>) =>
    ({
      roles: Object.entries(replicas).map(([name, n]) => ({ name, replicas: n })),
      scaling: { roles: Object.entries(bounds).map(([name, [minReplicas, maxReplicas]]) => ({ name, minReplicas, maxReplicas })) },
    }) as unknown as DeploymentSpec;

  it.each([
    // before, requested, bounds, written, clamped
    [{ main: 2 }, { main: 4 }, { main: [1, 8] }, { main: 4 }, []],
    [{ main: 2 }, { main: 12 }, { main: [1, 8] }, { main: 8 }, [{ role: "main", requested: 12, replicas: 8, limitedBy: "MaxReplicas" }]],
    [{ main: 2 }, { main: 0 }, { main: [1, 8] }, { main: 1 }, [{ role: "main", requested: 0, replicas: 1, limitedBy: "MinReplicas" }]],
    [{ main: 2 }, { main: 0 }, { main: [0, 8] }, { main: 0 }, []], // scale to zero where minReplicas is 0
    [{ main: 2 }, { main: 40 }, {}, { main: 40 }, []], // no scaling entry: no bounds
    [{ main: 12 }, { main: 12 }, { main: [1, 8] }, { main: 12 }, []], // unchanged (a user's value) is left alone
    [
      { prefill: 1, decode: 3 },
      { prefill: 9, decode: 3 },
      { prefill: [1, 4], decode: [1, 2] },
      { prefill: 4, decode: 3 },
      [{ role: "prefill", requested: 9, replicas: 4, limitedBy: "MaxReplicas" }],
    ],
  ] as const)("%j → %j within %j → %j", (before, requested, bounds, written, clamped) => {
    const next = spec(requested, bounds as Record<string, [number, number]>);
    const result = clampAutoscalerReplicas(spec(before, bounds as Record<string, [number, number]>), next);
    expect(Object.fromEntries(result.spec.roles.map((r) => [r.name, r.replicas]))).toEqual(written);
    expect(result.clamped).toEqual(clamped);
    if (clamped.length === 0) expect(result.spec).toBe(next);
  });
});
