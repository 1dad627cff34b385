// Bounds on the autoscaler's targets: per-role min/max, the prefill:decode ratio of a PD
// deployment, and capacity (project quota, the cluster's free GPUs). Capacity only ever holds a
// scale-up back, never causes a scale-down, so free GPUs moving by one cannot make a role flap.
import type { DeploymentSpec } from "./deployment-spec.ts";
import type { LimitedBy } from "./scaling-signals.ts";

/** Float slack for ratio comparisons (0.1 × 30 = 3.0000000000000004). */
const EPSILON = 1e-9;

export function clampReplicas(replicas: number, min: number, max: number): { replicas: number; limitedBy?: LimitedBy } {
  if (replicas > max) return { replicas: max, limitedBy: "MaxReplicas" };
  if (replicas < min) return { replicas: min, limitedBy: "MinReplicas" };
  return { replicas };
}

/** One role whose replicas the autoscaler's write asked outside the role's scaling bounds. */
export interface ClampedRole {
  role: string;
  requested: number;
  replicas: number;
  limitedBy: "MinReplicas" | "MaxReplicas";
}

/**
 * The autoscaler's replicas write (an agent credential's PATCH), held to each role's
 * `spec.scaling.roles[*]` bounds: an agent with a stale view of the spec (bounds changed
 * since it evaluated) gets the nearest allowed value rather than a refusal it would retry.
 * Only roles whose replicas the write changes are clamped; a role without a scaling entry
 * has no bounds, and a stored value outside the bounds (set by a user) is left alone.
 */
export function clampAutoscalerReplicas(previous: DeploymentSpec, next: DeploymentSpec): { spec: DeploymentSpec; clamped: ClampedRole[] } {
  const before = new Map(previous.roles.map((role) => [role.name, role.replicas]));
  const clamped: ClampedRole[] = [];
  const roles = next.roles.map((role) => {
    const bounds = next.scaling?.roles.find((entry) => entry.name === role.name);
    if (!bounds || before.get(role.name) === role.replicas) return role;
    const held = clampReplicas(role.replicas, bounds.minReplicas, bounds.maxReplicas);
    if (!held.limitedBy) return role;
    clamped.push({ role: role.name, requested: role.replicas, replicas: held.replicas, limitedBy: held.limitedBy as ClampedRole["limitedBy"] });
    return { ...role, replicas: held.replicas };
  });
  return { spec: clamped.length > 0 ? { ...next, roles } : next, clamped };
}

export function describeClamp(c: ClampedRole): string {
  const bound = c.limitedBy === "MaxReplicas" ? "maxReplicas" : "minReplicas";
  return `role ${c.role}: replicas ${c.requested} is outside spec.scaling's bounds; set to ${bound} ${c.replicas}`;
}

export interface RatioSide {
  /** Target so far. */
  desired: number;
  /** Replicas now: a ratio adjustment may shrink a scale-up, never go below this when lowering. */
  current: number;
  min: number;
  max: number;
}

export interface RatioBounds {
  min: number;
  max: number;
}

export function ratioHolds(prefill: number, decode: number, ratio: RatioBounds): boolean {
  if (prefill === 0 && decode === 0) return true;
  return prefill >= ratio.min * decode - EPSILON && prefill <= ratio.max * decode + EPSILON;
}

/**
 * prefill:decode replicas within [ratio.min, ratio.max]. The side that is too small is raised
 * (p = ⌈min × d⌉, or d = ⌈p ÷ max⌉), up to its maxReplicas; when that is not enough, the other
 * side's scale-up is cut back (p ≤ max × d, d ≤ p ÷ min), never below its current count or its
 * minReplicas — the ratio never causes a scale-down. Both at zero (scale to zero) is allowed.
 * Returns which sides moved; `holds` false when the bounds cannot be met.
 */
export function applyPdRatio(prefill: RatioSide, decode: RatioSide, ratio: RatioBounds): { prefill: number; decode: number; moved: ("prefill" | "decode")[]; holds: boolean } {
  let p = prefill.desired;
  let d = decode.desired;
  const moved = new Set<"prefill" | "decode">();
  if (p < ratio.min * d - EPSILON) {
    const raised = Math.min(prefill.max, Math.ceil(ratio.min * d - EPSILON));
    if (raised > p) {
      p = raised;
      moved.add("prefill");
    }
    if (p < ratio.min * d - EPSILON) {
      const lowered = Math.max(decode.min, Math.min(decode.current, d), Math.floor(p / ratio.min + EPSILON));
      if (lowered < d) {
        d = lowered;
        moved.add("decode");
      }
    }
  } else if (p > ratio.max * d + EPSILON) {
    const raised = Math.min(decode.max, Math.ceil(p / ratio.max - EPSILON));
    if (raised > d) {
      d = raised;
      moved.add("decode");
    }
    if (p > ratio.max * d + EPSILON) {
      const lowered = Math.max(prefill.min, Math.min(prefill.current, p), Math.floor(ratio.max * d + EPSILON));
      if (lowered < p) {
        p = lowered;
        moved.add("prefill");
      }
    }
  }
  return { prefill: p, decode: d, moved: [...moved], holds: ratioHolds(p, d, ratio) };
}

export interface CapacityRole {
  name: string;
  current: number;
  desired: number;
  gpusPerReplica: number;
  /** The role's GPU type; undefined = any type. */
  gpuType?: string;
}

export interface Capacity {
  /** GPUs the project quota still allows; undefined = no quota. */
  quotaGpusLeft?: number;
  /** Free GPUs by type; undefined = unknown (no bound). */
  freeGpus?: Readonly<Record<string, number>>;
}

export interface Shortage {
  role: string;
  limitedBy: "Quota" | "InsufficientGPU";
  /** Replicas the role wanted and what fits. */
  wanted: number;
  fits: number;
  /** GPUs the whole wanted scale-up needed, and what the binding bound had left. */
  neededGpus: number;
  availableGpus: number;
  gpuType?: string;
}

function extraGpus(role: CapacityRole, desired: number): number {
  return Math.max(0, desired - role.current) * role.gpusPerReplica;
}

/**
 * Scale-ups that fit, in the order quota then free GPUs. The GPUs a scale-up needs are
 * (desired − current) × GPUs per replica, summed over the deployment's roles: against the quota
 * in total, against the free GPUs per type (a role of any type draws on the sum of all types).
 * GPUs that retiring replicas will free are not counted until they show free. Fragmentation
 * across nodes is not modelled (a pod that fits no single node stays Pending and the status
 * reports InsufficientGPU). While a bound is exceeded, one replica is taken off a scaling-up
 * role that draws on it: one whose removal keeps `keepsRatio` true if any, then the largest
 * scale-up, then spec order.
 */
export function fitCapacity(
  roles: readonly CapacityRole[],
  capacity: Capacity,
  keepsRatio: (desired: Readonly<Record<string, number>>) => boolean = () => true,
): { desired: Record<string, number>; shortages: Shortage[] } {
  const desired: Record<string, number> = Object.fromEntries(roles.map((r) => [r.name, r.desired]));
  const wantedGpus = (pick: (r: CapacityRole) => boolean) => roles.filter(pick).reduce((sum, r) => sum + extraGpus(r, r.desired), 0);
  const shortages = new Map<string, Shortage>();

  interface Pool {
    limitedBy: "Quota" | "InsufficientGPU";
    available: number;
    draws: (r: CapacityRole) => boolean;
    gpuType?: string;
  }
  const pools: Pool[] = [];
  if (capacity.quotaGpusLeft !== undefined) pools.push({ limitedBy: "Quota", available: Math.max(0, capacity.quotaGpusLeft), draws: () => true });
  if (capacity.freeGpus !== undefined) {
    const free = capacity.freeGpus;
    for (const type of new Set(roles.map((r) => r.gpuType).filter((t): t is string => t !== undefined))) {
      pools.push({ limitedBy: "InsufficientGPU", available: Math.max(0, free[type] ?? 0), draws: (r) => r.gpuType === type, gpuType: type });
    }
    if (roles.some((r) => r.gpuType === undefined)) {
      const total = Object.values(free).reduce((sum, n) => sum + Math.max(0, n), 0);
      pools.push({ limitedBy: "InsufficientGPU", available: total, draws: () => true });
    }
  }

  for (const pool of pools) {
    const used = () => roles.filter(pool.draws).reduce((sum, r) => sum + extraGpus(r, desired[r.name]!), 0);
    while (used() > pool.available) {
      const candidates = roles.filter((r) => pool.draws(r) && desired[r.name]! > r.current);
      const keeping = candidates.filter((r) => keepsRatio({ ...desired, [r.name]: desired[r.name]! - 1 }));
      const from = keeping.length > 0 ? keeping : candidates;
      const pick = from.reduce((best, r) => (desired[r.name]! - r.current > desired[best.name]! - best.current ? r : best));
      desired[pick.name] = desired[pick.name]! - 1;
      if (!shortages.has(pick.name)) {
        shortages.set(pick.name, {
          role: pick.name,
          limitedBy: pool.limitedBy,
          wanted: pick.desired,
          fits: 0,
          neededGpus: wantedGpus(pool.draws),
          availableGpus: pool.available,
          ...(pool.gpuType !== undefined && { gpuType: pool.gpuType }),
        });
      }
    }
  }
  for (const s of shortages.values()) s.fits = desired[s.role]!;
  return { desired, shortages: [...shortages.values()] };
}

export function describeShortage(s: Shortage, gpusPerReplica: number, current: number): string {
  const what = s.gpuType ? `${s.gpuType} GPUs` : "GPUs";
  const bound = s.limitedBy === "Quota" ? `the project quota allows ${s.availableGpus} more GPUs` : `${s.availableGpus} ${what} free`;
  return `role ${s.role} wants ${s.wanted} replicas (now ${current}, ${gpusPerReplica} GPUs each): ${s.neededGpus} ${what} needed, ${bound}; holding at ${s.fits}`;
}
