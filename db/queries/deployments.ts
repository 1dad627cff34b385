// SQL for deployments. Writes that depend on what was read (If-Match, merge patches)
// lock the row first so a check and its write are one atomic step.
import { and, asc, eq, gt, isNull, ne, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { deploymentTombstones, deployments, nextResourceVersion } from "../schema.ts";
import { lockChangeLog } from "./change-log.ts";
import { afterCursor, keysetOrder, type PageCursor } from "./pagination.ts";
import { preparedPerDb } from "./prepared.ts";

export type DeploymentRow = typeof deployments.$inferSelect;
export type NewDeploymentRow = Omit<DeploymentRow, "resourceVersion" | "createdVersion">;

/** Inside a transaction: takes the change-log lock, so resourceVersions commit in order. */
export async function insertDeployment(db: Db, row: NewDeploymentRow): Promise<DeploymentRow | undefined> {
  await lockChangeLog(db);
  const [taken] = await db.select({ version: nextResourceVersion }).from(sql`(select 1) as one`);
  const version = Number(taken!.version);
  const [created] = await db
    .insert(deployments)
    .values({ ...row, resourceVersion: version, createdVersion: version })
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

/** Every deployment of a cluster, row-locked (inside a transaction). */
export async function lockClusterDeployments(db: Db, clusterId: string): Promise<DeploymentRow[]> {
  return db.select().from(deployments).where(eq(deployments.clusterId, clusterId)).orderBy(deployments.id).for("update");
}

/** Deployments no cluster has taken yet whose spec names this cluster, row-locked (inside a transaction). */
export async function lockDeploymentsWaitingFor(db: Db, clusterId: string): Promise<DeploymentRow[]> {
  return db
    .select()
    .from(deployments)
    .where(and(isNull(deployments.clusterId), sql`${deployments.spec}->>'clusterId' = ${clusterId}`))
    .orderBy(deployments.id)
    .for("update");
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

/**
 * Applies changes and takes a new resourceVersion; every change, spec or status, takes one.
 * Inside a transaction: takes the change-log lock, so resourceVersions commit in order.
 */
export async function updateDeployment(
  db: Db,
  id: string,
  changes: DeploymentChanges,
  updatedAt: Date,
): Promise<DeploymentRow | undefined> {
  await lockChangeLog(db);
  const [row] = await db
    .update(deployments)
    .set({ ...changes, updatedAt, resourceVersion: nextResourceVersion })
    .where(eq(deployments.id, id))
    .returning();
  return row;
}

/** Removes the row and leaves a tombstone with a new resourceVersion (inside a transaction). */
export async function deleteDeployment(db: Db, id: string, deletedAt: Date): Promise<boolean> {
  await lockChangeLog(db);
  const rows = await db.delete(deployments).where(eq(deployments.id, id)).returning();
  const row = rows[0];
  if (!row) return false;
  await db.insert(deploymentTombstones).values({
    id: row.id,
    projectId: row.projectId,
    clusterId: row.clusterId,
    name: row.name,
    resourceVersion: nextResourceVersion,
    deletedAt,
  });
  return true;
}

export type DeploymentChange =
  | { kind: "upsert"; resourceVersion: number; row: DeploymentRow }
  | { kind: "delete"; resourceVersion: number; tombstone: typeof deploymentTombstones.$inferSelect };

/**
 * Every deployment and tombstone changed after `afterVersion`, oldest change first.
 * Deployment writes commit in resourceVersion order (change-log lock), so a reader
 * that resumes after the last version it saw misses nothing.
 */
export async function listDeploymentChanges(
  db: Db,
  filter: { afterVersion: number; limit: number; projectId?: string; clusterId?: string; includeDeletions: boolean },
): Promise<DeploymentChange[]> {
  const rowFilters: SQL[] = [gt(deployments.resourceVersion, filter.afterVersion)];
  if (filter.projectId) rowFilters.push(eq(deployments.projectId, filter.projectId));
  if (filter.clusterId) rowFilters.push(eq(deployments.clusterId, filter.clusterId));
  const rows = await db
    .select()
    .from(deployments)
    .where(and(...rowFilters))
    .orderBy(asc(deployments.resourceVersion))
    .limit(filter.limit);
  const changes: DeploymentChange[] = rows.map((row) => ({ kind: "upsert", resourceVersion: row.resourceVersion, row }));
  // A list cut at `limit` is complete only up to its last version; past that, the other
  // list's changes could overtake ones not yet read.
  let completeUpTo = rows.length === filter.limit ? rows[rows.length - 1]!.resourceVersion : Infinity;
  if (filter.includeDeletions) {
    const stoneFilters: SQL[] = [gt(deploymentTombstones.resourceVersion, filter.afterVersion)];
    if (filter.projectId) stoneFilters.push(eq(deploymentTombstones.projectId, filter.projectId));
    if (filter.clusterId) stoneFilters.push(eq(deploymentTombstones.clusterId, filter.clusterId));
    const stones = await db
      .select()
      .from(deploymentTombstones)
      .where(and(...stoneFilters))
      .orderBy(asc(deploymentTombstones.resourceVersion))
      .limit(filter.limit);
    changes.push(...stones.map((tombstone) => ({ kind: "delete" as const, resourceVersion: tombstone.resourceVersion, tombstone })));
    if (stones.length === filter.limit) completeUpTo = Math.min(completeUpTo, stones[stones.length - 1]!.resourceVersion);
  }
  changes.sort((a, b) => a.resourceVersion - b.resourceVersion);
  return changes.filter((change) => change.resourceVersion <= completeUpTo);
}

/**
 * Every current deployment (at most `limit`) and the newest resourceVersion of any
 * deployment or tombstone, read in one snapshot: a watcher that lists these and then
 * follows changes after that version misses nothing and replays nothing.
 */
export async function snapshotDeployments(
  db: Db,
  filter: { limit: number; projectId?: string; clusterId?: string },
): Promise<{ rows: DeploymentRow[]; resourceVersion: number }> {
  return db.transaction(
    async (tx) => {
      const where = and(
        filter.projectId ? eq(deployments.projectId, filter.projectId) : undefined,
        filter.clusterId ? eq(deployments.clusterId, filter.clusterId) : undefined,
      );
      const rows = await tx.select().from(deployments).where(where).orderBy(asc(deployments.resourceVersion)).limit(filter.limit);
      return { rows, resourceVersion: await latestChangeVersion(tx) };
    },
    { isolationLevel: "repeatable read", accessMode: "read only" },
  );
}

/**
 * The newest resourceVersion of any deployment or tombstone, never below the tombstones' purge
 * horizon: once retention has purged every tombstone, the version a reader resumes from must
 * still be past what was purged (docs/design.md §14.5).
 */
export async function latestChangeVersion(db: Db): Promise<number> {
  const [latest] = await db
    .select({
      rv: sql<string | null>`greatest((select max(resource_version) from deployments), (select max(resource_version) from deployment_tombstones),
                                      (select purged_through from retention_horizons where stream = 'deployment_tombstones'))`,
    })
    .from(sql`(select 1) as one`);
  return Number(latest?.rv ?? 0);
}

/**
 * Gives a cluster every deployment no cluster has yet (those that name no cluster, or
 * name this one): the first cluster to register takes them. Inside a transaction.
 */
export async function assignUnassignedDeployments(db: Db, clusterId: string, now: Date): Promise<number> {
  await lockChangeLog(db);
  const rows = await db
    .update(deployments)
    .set({ clusterId, updatedAt: now, resourceVersion: nextResourceVersion })
    .where(
      and(
        isNull(deployments.clusterId),
        sql`(${deployments.spec}->>'clusterId' is null or ${deployments.spec}->>'clusterId' = ${clusterId})`,
      ),
    )
    .returning({ id: deployments.id });
  return rows.length;
}
