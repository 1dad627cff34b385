// SQL for projects. Quota checks lock the project row so concurrent creates in one
// project are serialised and cannot both pass.
import { and, eq, inArray, count, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { deployments, nextResourceVersion, projects } from "../schema.ts";
import { afterCursor, keysetOrder, type PageCursor } from "./pagination.ts";

export type ProjectRow = typeof projects.$inferSelect;

export async function insertProject(db: Db, row: Omit<ProjectRow, "resourceVersion">): Promise<ProjectRow> {
  const [created] = await db
    .insert(projects)
    .values({ ...row, resourceVersion: nextResourceVersion })
    .onConflictDoNothing({ target: projects.name })
    .returning();
  return created!;
}

export async function findProjectById(db: Db, id: string): Promise<ProjectRow | undefined> {
  const [row] = await db.select().from(projects).where(eq(projects.id, id));
  return row;
}

export async function findProjectByName(db: Db, name: string): Promise<ProjectRow | undefined> {
  const [row] = await db.select().from(projects).where(eq(projects.name, name));
  return row;
}

export async function findProjectsByIds(db: Db, ids: string[]): Promise<ProjectRow[]> {
  if (ids.length === 0) return [];
  return db.select().from(projects).where(inArray(projects.id, ids));
}

/**
 * Locks the project row until the transaction ends. `update` serialises quota checks
 * and project deletion; `key share` only keeps the project from being deleted meanwhile,
 * and lets writes in a project without a quota run side by side.
 */
export async function lockProject(
  db: Db,
  id: string,
  strength: "update" | "key share" = "update",
): Promise<ProjectRow | undefined> {
  const [row] = await db.select().from(projects).where(eq(projects.id, id)).for(strength);
  return row;
}

export async function listProjects(
  db: Db,
  options: { cursor?: PageCursor; limit: number; onlyId?: string },
): Promise<ProjectRow[]> {
  const filters: (SQL | undefined)[] = [afterCursor(projects.createdAt, projects.id, options.cursor)];
  if (options.onlyId) filters.push(eq(projects.id, options.onlyId));
  return db
    .select()
    .from(projects)
    .where(and(...filters))
    .orderBy(...keysetOrder(projects.createdAt, projects.id))
    .limit(options.limit);
}

export async function updateProject(
  db: Db,
  id: string,
  changes: Partial<Pick<ProjectRow, "maxGpus" | "allowCustomCommands">>,
  updatedAt: Date,
): Promise<ProjectRow | undefined> {
  const [row] = await db
    .update(projects)
    .set({ ...changes, updatedAt, resourceVersion: nextResourceVersion })
    .where(eq(projects.id, id))
    .returning();
  return row;
}

export async function deleteProject(db: Db, id: string): Promise<boolean> {
  const rows = await db.delete(projects).where(eq(projects.id, id)).returning({ id: projects.id });
  return rows.length > 0;
}

export async function countProjectDeployments(db: Db, projectId: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(deployments).where(eq(deployments.projectId, projectId));
  return Number(row?.n ?? 0);
}
