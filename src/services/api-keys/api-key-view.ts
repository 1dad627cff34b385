import type { ApiKeyRow } from "../../../db/queries/api-keys.ts";
import type { ApiKey } from "../../domain/resources.ts";

export function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    projectId: row.projectId,
    prefix: row.tokenPrefix,
    revokedAt: row.revokedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
