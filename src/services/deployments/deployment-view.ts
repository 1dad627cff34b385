// How a stored deployment row is shown to clients, and its ETag.
import type { DeploymentRow } from "../../../db/queries/deployments.ts";
import type { Deployment } from "../../domain/deployment.ts";

export function toDeployment(row: DeploymentRow): Deployment {
  return {
    id: row.id,
    name: row.name,
    projectId: row.projectId,
    labels: row.labels,
    generation: row.generation,
    resourceVersion: row.resourceVersion,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    spec: row.spec as Deployment["spec"],
    status: row.status as Deployment["status"],
  };
}

export function etagOf(resourceVersion: number): string {
  return `"${resourceVersion}"`;
}

/** A created or changed deployment and admission's warnings about its spec (docs/design.md §5.3). */
export interface WrittenDeployment {
  deployment: Deployment;
  warnings: string[];
}
