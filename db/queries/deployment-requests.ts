// SQL for deployment requests: insert (name unique per project), reads, keyset-paged lists, the
// status writes of planning and apply, and delete.
import { and, eq, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { deploymentRequests, nextResourceVersion } from "../schema.ts";
import { afterCursor, keysetOrder, type PageCursor } from "./pagination.ts";

export type DeploymentRequestRow = typeof deploymentRequests.$inferSelect;

/** Inserts a request; undefined when its name is taken in the project. */
export async function insertDeploymentRequest(db: Db, row: Omit<DeploymentRequestRow, "resourceVersion">): Promise<DeploymentRequestRow | undefined> {
  const [created] = await db
    .insert(deploymentRequests)
    .values({ ...row, resourceVersion: nextResourceVersion })
    .onConflictDoNothing({ target: [deploymentRequests.projectId, deploymentRequests.name] })
    .returning();
  return created;
}

export async function findDeploymentRequest(db: Db, id: string): Promise<DeploymentRequestRow | undefined> {
  const [row] = await db.select().from(deploymentRequests).where(eq(deploymentRequests.id, id));
  return row;
}

export async function lockDeploymentRequest(db: Db, id: string): Promise<DeploymentRequestRow | undefined> {
  const [row] = await db.select().from(deploymentRequests).where(eq(deploymentRequests.id, id)).for("update");
  return row;
}

export async function listDeploymentRequests(
  db: Db,
  filter: { cursor?: PageCursor; limit: number; projectId?: string },
): Promise<DeploymentRequestRow[]> {
  const filters: (SQL | undefined)[] = [afterCursor(deploymentRequests.createdAt, deploymentRequests.id, filter.cursor)];
  if (filter.projectId) filters.push(eq(deploymentRequests.projectId, filter.projectId));
  return db
    .select()
    .from(deploymentRequests)
    .where(and(...filters))
    .orderBy(...keysetOrder(deploymentRequests.createdAt, deploymentRequests.id))
    .limit(filter.limit);
}

/** Replaces the status (never the spec: it is immutable once planning started). */
export async function updateDeploymentRequestStatus(
  db: Db,
  id: string,
  changes: Pick<DeploymentRequestRow, "status" | "phase" | "deploymentId">,
  updatedAt: Date,
): Promise<DeploymentRequestRow | undefined> {
  const [row] = await db
    .update(deploymentRequests)
    .set({ ...changes, updatedAt, resourceVersion: nextResourceVersion })
    .where(eq(deploymentRequests.id, id))
    .returning();
  return row;
}

export async function deleteDeploymentRequest(db: Db, id: string): Promise<boolean> {
  const rows = await db.delete(deploymentRequests).where(eq(deploymentRequests.id, id)).returning({ id: deploymentRequests.id });
  return rows.length > 0;
}
