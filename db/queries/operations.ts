// SQL for operations: insert (refused while one of the same kind is active for the same
// target, by the partial unique index), reads, keyset-paged lists (by project, deployment or
// the deployment's cluster) and updates.
import { and, desc, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { deployments, nextResourceVersion, operations } from "../schema.ts";
import { afterCursor, keysetOrder, type PageCursor } from "./pagination.ts";

export type OperationRow = typeof operations.$inferSelect;
export type NewOperationRow = Omit<OperationRow, "resourceVersion">;

/** Inserts an operation; undefined when one of its kind is already Pending or Running for the same target. */
export async function insertOperation(db: Db, row: NewOperationRow): Promise<OperationRow | undefined> {
  const [created] = await db
    .insert(operations)
    .values({ ...row, resourceVersion: nextResourceVersion })
    .onConflictDoNothing()
    .returning();
  return created;
}

export async function findOperation(db: Db, id: string): Promise<OperationRow | undefined> {
  const [row] = await db.select().from(operations).where(eq(operations.id, id));
  return row;
}

/** The operation and its deployment's cluster, row-locked (inside a transaction). */
export async function lockOperation(db: Db, id: string): Promise<{ row: OperationRow; clusterId: string | null } | undefined> {
  const [found] = await db
    .select({ row: operations, clusterId: deployments.clusterId })
    .from(operations)
    .innerJoin(deployments, eq(deployments.id, operations.deploymentId))
    .where(eq(operations.id, id))
    .for("update", { of: operations });
  return found;
}

/** The Pending or Running operation of this kind on this target, if any. */
export async function findActiveOperation(
  db: Db,
  target: { deploymentId: string; kind: string; role: string; replica?: number | null },
): Promise<OperationRow | undefined> {
  const [row] = await db
    .select()
    .from(operations)
    .where(
      and(
        eq(operations.deploymentId, target.deploymentId),
        eq(operations.kind, target.kind),
        eq(operations.role, target.role),
        target.replica === undefined || target.replica === null ? isNull(operations.replica) : eq(operations.replica, target.replica),
        inArray(operations.phase, ["Pending", "Running"]),
      ),
    )
    .limit(1);
  return row;
}

/** The operation of a kind on a role that changed last (any phase): resourceVersion orders every write. */
export async function findLatestOperation(db: Db, target: { deploymentId: string; kind: string; role: string }): Promise<OperationRow | undefined> {
  const [row] = await db
    .select()
    .from(operations)
    .where(and(eq(operations.deploymentId, target.deploymentId), eq(operations.kind, target.kind), eq(operations.role, target.role)))
    .orderBy(desc(operations.resourceVersion))
    .limit(1);
  return row;
}

export interface OperationFilter {
  cursor?: PageCursor;
  limit: number;
  projectId?: string;
  /** Only operations of deployments that run on this cluster (the agent's view). */
  clusterId?: string;
  deploymentId?: string;
  kind?: string;
  phases?: string[];
}

export async function listOperations(db: Db, filter: OperationFilter): Promise<OperationRow[]> {
  const filters: (SQL | undefined)[] = [afterCursor(operations.createdAt, operations.id, filter.cursor)];
  if (filter.projectId) filters.push(eq(operations.projectId, filter.projectId));
  if (filter.deploymentId) filters.push(eq(operations.deploymentId, filter.deploymentId));
  if (filter.kind) filters.push(eq(operations.kind, filter.kind));
  if (filter.phases && filter.phases.length > 0) filters.push(inArray(operations.phase, filter.phases));
  if (filter.clusterId) {
    filters.push(sql`${operations.deploymentId} in (select ${deployments.id} from ${deployments} where ${deployments.clusterId} = ${filter.clusterId})`);
  }
  return db
    .select()
    .from(operations)
    .where(and(...filters))
    .orderBy(...keysetOrder(operations.createdAt, operations.id))
    .limit(filter.limit);
}

export type OperationChanges = Partial<
  Pick<OperationRow, "phase" | "step" | "steps" | "message" | "progress" | "result" | "error" | "finishedAt">
>;

export async function updateOperation(db: Db, id: string, changes: OperationChanges, updatedAt: Date): Promise<OperationRow | undefined> {
  const [row] = await db
    .update(operations)
    .set({ ...changes, updatedAt, resourceVersion: nextResourceVersion })
    .where(eq(operations.id, id))
    .returning();
  return row;
}
