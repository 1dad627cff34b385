// The GPU catalogue, read-only (GET /v1/catalog/gpus): the GPU types berth knows, with the
// figures the planner uses. Any key may read it.
import { GPU_PROFILES, GPU_TYPES, type GpuFacts } from "../../domain/gpu-profiles.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";

export function listCatalogGpus({ ctx }: { ctx: ServiceContext }): { items: GpuFacts[] } {
  requireUser(ctx.principal);
  return { items: GPU_TYPES.map((id) => GPU_PROFILES[id]) };
}
