// SQL for clusters and their agent credentials.
import { and, eq, inArray, isNull, gt, lt, or, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { agentCredentials, clusters, deployments, nextResourceVersion } from "../schema.ts";
import { afterCursor, keysetOrder, type PageCursor } from "./pagination.ts";

export type ClusterRow = typeof clusters.$inferSelect;
export type AgentCredentialRow = typeof agentCredentials.$inferSelect;

export async function insertCluster(db: Db, row: Omit<ClusterRow, "resourceVersion">): Promise<ClusterRow | undefined> {
  const [created] = await db
    .insert(clusters)
    .values({ ...row, resourceVersion: nextResourceVersion })
    .onConflictDoNothing({ target: clusters.name })
    .returning();
  return created;
}

export async function findClusterById(db: Db, id: string): Promise<ClusterRow | undefined> {
  const [row] = await db.select().from(clusters).where(eq(clusters.id, id));
  return row;
}

/** Clusters some deployment of the project runs on (a project-bound key sees only these). */
const usedByProject = (projectId: string): SQL =>
  sql`exists (select 1 from ${deployments} where ${deployments.clusterId} = ${clusters.id} and ${deployments.projectId} = ${projectId})`;

/** A cluster by id, only where some deployment of the project runs on it. */
export async function findClusterUsedByProject(db: Db, id: string, projectId: string): Promise<ClusterRow | undefined> {
  const [row] = await db.select().from(clusters).where(and(eq(clusters.id, id), usedByProject(projectId)));
  return row;
}

export async function listClusters(db: Db, options: { cursor?: PageCursor; limit: number; usedByProjectId?: string }): Promise<ClusterRow[]> {
  const filters: (SQL | undefined)[] = [
    afterCursor(clusters.createdAt, clusters.id, options.cursor),
    options.usedByProjectId === undefined ? undefined : usedByProject(options.usedByProjectId),
  ];
  return db
    .select()
    .from(clusters)
    .where(and(...filters))
    .orderBy(...keysetOrder(clusters.createdAt, clusters.id))
    .limit(options.limit);
}

/** Consumes a join token: it matches once, before it expires, and is cleared in the same statement. */
export async function consumeJoinToken(db: Db, tokenHash: string, now: Date): Promise<ClusterRow | undefined> {
  const [row] = await db
    .update(clusters)
    .set({ joinTokenHash: null, joinTokenExpiresAt: null, updatedAt: now, resourceVersion: nextResourceVersion })
    .where(and(eq(clusters.joinTokenHash, tokenHash), gt(clusters.joinTokenExpiresAt, now)))
    .returning();
  return row;
}

export async function insertAgentCredential(db: Db, row: Omit<AgentCredentialRow, "revokedAt" | "expiresAt">): Promise<void> {
  await db.insert(agentCredentials).values(row);
}

/** A credential works while it is neither revoked nor past its expiry (a rotated one's overlap). */
function usableAt(now: Date): SQL {
  return and(isNull(agentCredentials.revokedAt), or(isNull(agentCredentials.expiresAt), gt(agentCredentials.expiresAt, now)))!;
}

export async function findActiveAgentCredentialByHash(db: Db, tokenHash: string, now: Date): Promise<AgentCredentialRow | undefined> {
  const [row] = await db
    .select()
    .from(agentCredentials)
    .where(and(eq(agentCredentials.tokenHash, tokenHash), usableAt(now)));
  return row;
}

/** Which of these credential ids still work at `now` (one indexed query for many). */
export async function listUsableAgentCredentialIds(db: Db, ids: string[], now: Date): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .select({ id: agentCredentials.id })
    .from(agentCredentials)
    .where(and(inArray(agentCredentials.id, ids), usableAt(now)));
  return new Set(rows.map((row) => row.id));
}

/**
 * Makes a usable credential stop working at `at` (never later than an expiry it already
 * has); false when it was already unusable (revoked, or expired at `now`).
 */
export async function expireAgentCredential(db: Db, id: string, at: Date, now: Date): Promise<boolean> {
  const rows = await db
    .update(agentCredentials)
    .set({ expiresAt: sql`least(coalesce(${agentCredentials.expiresAt}, ${at}), ${at})` })
    .where(and(eq(agentCredentials.id, id), usableAt(now)))
    .returning({ id: agentCredentials.id });
  return rows.length > 0;
}

/** Revokes every credential of a cluster that was not revoked yet; returns their ids. */
export async function revokeClusterCredentials(db: Db, clusterId: string, at: Date): Promise<string[]> {
  const rows = await db
    .update(agentCredentials)
    .set({ revokedAt: at })
    .where(and(eq(agentCredentials.clusterId, clusterId), isNull(agentCredentials.revokedAt)))
    .returning({ id: agentCredentials.id });
  return rows.map((row) => row.id);
}

/** Replaces a cluster's join token (the previous one, used or not, stops working). */
export async function replaceJoinToken(
  db: Db,
  clusterId: string,
  token: { hash: string; expiresAt: Date; now: Date },
): Promise<ClusterRow | undefined> {
  const [row] = await db
    .update(clusters)
    .set({ joinTokenHash: token.hash, joinTokenExpiresAt: token.expiresAt, updatedAt: token.now, resourceVersion: nextResourceVersion })
    .where(eq(clusters.id, clusterId))
    .returning();
  return row;
}

/** Removes the cluster row (its credentials go with it, by cascade). */
export async function deleteClusterRow(db: Db, id: string): Promise<boolean> {
  const rows = await db.delete(clusters).where(eq(clusters.id, id)).returning({ id: clusters.id });
  return rows.length > 0;
}

export async function recordHeartbeat(
  db: Db,
  id: string,
  beat: { at: Date; agentVersion: string; inventory: unknown },
): Promise<ClusterRow | undefined> {
  const [row] = await db
    .update(clusters)
    .set({ lastHeartbeatAt: beat.at, agentVersion: beat.agentVersion, inventory: beat.inventory, updatedAt: beat.at })
    .where(eq(clusters.id, id))
    .returning();
  return row;
}

export async function lockCluster(db: Db, id: string): Promise<ClusterRow | undefined> {
  const [row] = await db.select().from(clusters).where(eq(clusters.id, id)).for("update");
  return row;
}

/** Clusters whose last heartbeat is older than `before` (candidates for a disconnected notice). */
export async function listSilentClusters(db: Db, before: Date): Promise<ClusterRow[]> {
  return db.select().from(clusters).where(lt(clusters.lastHeartbeatAt, before)).limit(1000);
}
