// SQL for clusters and their agent credentials.
import { and, eq, isNull, gt, lt, sql, type SQL } from "drizzle-orm";
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

export async function insertAgentCredential(db: Db, row: Omit<AgentCredentialRow, "revokedAt">): Promise<void> {
  await db.insert(agentCredentials).values(row);
}

export async function findActiveAgentCredentialByHash(db: Db, tokenHash: string): Promise<AgentCredentialRow | undefined> {
  const [row] = await db
    .select()
    .from(agentCredentials)
    .where(and(eq(agentCredentials.tokenHash, tokenHash), isNull(agentCredentials.revokedAt)));
  return row;
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
