// How a stored project row is shown to clients.
import type { ProjectRow } from "../../../db/queries/projects.ts";
import type { Project } from "../../domain/resources.ts";

export function namespaceOf(projectName: string): string {
  return `berth-${projectName}`;
}

export function toProject(row: ProjectRow): Project {
  return {
    id: row.id,
    name: row.name,
    ...(row.maxGpus === null ? {} : { maxGpus: row.maxGpus }),
    allowCustomCommands: row.allowCustomCommands,
    namespace: namespaceOf(row.name),
    resourceVersion: row.resourceVersion,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
