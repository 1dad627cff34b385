// The engine compatibility table, read-only (GET /v1/catalog/engines): per engine, the release
// each feature needs, the KV transports and the known failures admission warns about. Any key may read it.
import { ENGINE_COMPATIBILITY, type EngineCompatibility } from "../../domain/engine-compatibility.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";

export function listCatalogEngines({ ctx }: { ctx: ServiceContext }): { items: EngineCompatibility[] } {
  requireUser(ctx.principal);
  return { items: [...ENGINE_COMPATIBILITY] };
}
