// SQL for deployments. Writes that depend on what was read (If-Match, merge patches)
// lock the row first so a check and its write are one atomic step.
import { and, eq, ne, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { deployments, nextResourceVersion } from "../schema.ts";
import { afterCursor, keysetOrder, type PageCursor } from "./pagination.ts";
import { preparedPerDb } from "./prepared.ts";

export type DeploymentRow = typeof deployments.$inferSelect;
export type NewDeploymentRow = Omit<DeploymentRow, "resourceVersion">;

export async function insertDeployment(db: Db, row: NewDeploymentRow): Promise<DeploymentRow | undefined> {
  const [created] = await db
    .insert(deployments)
    .values({ ...row, resourceVersion: nextResourceVersion })
    .onConflictDoNothing({ target: [deployments.projectId, deployments.name] })
    .returning();
  return created;
}

// The hot reads are prepared once per database handle: building a drizzle query costs
// more CPU than the round trip itself on a GET.
const hotReads = preparedPerDb((db) => ({
  byId: db.select().from(deployments).where(eq(deployments.id, sql.placeholder("id"))).prepare("deployment_by_id"),
  byName: db
    .select()
    .from(deployments)
    .where(eq(deployments.name, sql.placeholder("name")))
    .limit(20)
    .prepare("deployments_by_name"),
  byNameInProject: db
    .select()
    .from(deployments)
    .where(and(eq(deployments.name, sql.placeholder("name")), eq(deployments.projectId, sql.placeholder("projectId"))))
    .prepare("deployment_by_name_in_project"),
}));

export async function findDeploymentById(db: Db, id: string): Promise<DeploymentRow | undefined> {
  const [row] = await hotReads(db).byId.execute({ id });
  return row;
}

/** Every deployment with this name, optionally only in one project (names are unique per project). */
export async function findDeploymentsByName(db: Db, name: string, projectId?: string): Promise<DeploymentRow[]> {
  const reads = hotReads(db);
  return projectId ? reads.byNameInProject.execute({ name, projectId }) : reads.byName.execute({ name });
}

export async function lockDeployment(db: Db, id: string): Promise<DeploymentRow | undefined> {
  const [row] = await db.select().from(deployments).where(eq(deployments.id, id)).for("update");
  return row;
}

export interface DeploymentFilter {
  projectId?: string;
  phase?: string;
  labels?: Record<string, string>;
  cursor?: PageCursor;
  limit: number;
}

export async function listDeployments(db: Db, filter: DeploymentFilter): Promise<DeploymentRow[]> {
  const filters: (SQL | undefined)[] = [afterCursor(deployments.createdAt, deployments.id, filter.cursor)];
  if (filter.projectId) filters.push(eq(deployments.projectId, filter.projectId));
  if (filter.phase) filters.push(eq(deployments.phase, filter.phase));
  if (filter.labels && Object.keys(filter.labels).length > 0) {
    filters.push(sql`${deployments.labels} @> ${JSON.stringify(filter.labels)}::jsonb`);
  }
  return db
    .select()
    .from(deployments)
    .where(and(...filters))
    .orderBy(...keysetOrder(deployments.createdAt, deployments.id))
    .limit(filter.limit);
}

/** The specs of a project's other deployments, for the GPU quota sum. */
export async function listProjectSpecs(db: Db, projectId: string, exceptId?: string): Promise<unknown[]> {
  const filters = [eq(deployments.projectId, projectId)];
  if (exceptId) filters.push(ne(deployments.id, exceptId));
  const rows = await db.select({ spec: deployments.spec }).from(deployments).where(and(...filters));
  return rows.map((row) => row.spec);
}

export type DeploymentChanges = Partial<
  Pick<DeploymentRow, "labels" | "spec" | "status" | "phase" | "generation" | "clusterId" | "deletionRequestedAt">
>;

/** Applies changes and takes a new resourceVersion; every change, spec or status, takes one. */
export async function updateDeployment(
  db: Db,
  id: string,
  changes: DeploymentChanges,
  updatedAt: Date,
): Promise<DeploymentRow | undefined> {
  const [row] = await db
    .update(deployments)
    .set({ ...changes, updatedAt, resourceVersion: nextResourceVersion })
    .where(eq(deployments.id, id))
    .returning();
  return row;
}

export async function deleteDeployment(db: Db, id: string): Promise<boolean> {
  const rows = await db.delete(deployments).where(eq(deployments.id, id)).returning({ id: deployments.id });
  return rows.length > 0;
}
