// The model catalogue, read-only (GET /v1/catalog/models): what the planner can size without
// being told the architecture. Any key may read it.
import type { ModelArchitecture } from "../../domain/model-catalog.ts";
import { MODEL_CATALOG } from "../../domain/model-catalog.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";

export function listCatalogModels({ ctx }: { ctx: ServiceContext }): { items: ModelArchitecture[] } {
  requireUser(ctx.principal);
  return { items: [...MODEL_CATALOG] };
}
