// SQL for deployment revisions: one row per generation, written by the transaction that
// wrote the generation; the oldest beyond the retained count are pruned by that same write.
import { and, desc, eq, lt, lte, sql } from "drizzle-orm";
import type { Db } from "../client.ts";
import { deploymentRevisions } from "../schema.ts";

export type RevisionRow = typeof deploymentRevisions.$inferSelect;

/**
 * Records a generation and drops those `retained` or more generations older (inside the
 * write's transaction). Every generation is recorded, so this keeps at most `retained`.
 */
export async function insertRevision(db: Db, row: RevisionRow, retained: number): Promise<void> {
  await db.insert(deploymentRevisions).values(row);
  await db
    .delete(deploymentRevisions)
    .where(and(eq(deploymentRevisions.deploymentId, row.deploymentId), lte(deploymentRevisions.generation, row.generation - retained)));
}

/** Newest first, generations below `beforeGeneration` when given. */
export async function listRevisions(
  db: Db,
  filter: { deploymentId: string; beforeGeneration?: number; limit: number },
): Promise<RevisionRow[]> {
  return db
    .select()
    .from(deploymentRevisions)
    .where(
      and(
        eq(deploymentRevisions.deploymentId, filter.deploymentId),
        filter.beforeGeneration === undefined ? undefined : lt(deploymentRevisions.generation, filter.beforeGeneration),
      ),
    )
    .orderBy(desc(deploymentRevisions.generation))
    .limit(filter.limit);
}

export async function findRevision(db: Db, deploymentId: string, generation: number): Promise<RevisionRow | undefined> {
  const [row] = await db
    .select()
    .from(deploymentRevisions)
    .where(and(eq(deploymentRevisions.deploymentId, deploymentId), eq(deploymentRevisions.generation, generation)));
  return row;
}

/** The oldest and newest retained generations; undefined when none is. */
export async function retainedGenerations(db: Db, deploymentId: string): Promise<{ oldest: number; newest: number } | undefined> {
  const [row] = await db
    .select({
      oldest: sql<number | null>`min(${deploymentRevisions.generation})`,
      newest: sql<number | null>`max(${deploymentRevisions.generation})`,
    })
    .from(deploymentRevisions)
    .where(eq(deploymentRevisions.deploymentId, deploymentId));
  return row?.oldest == null || row.newest == null ? undefined : { oldest: Number(row.oldest), newest: Number(row.newest) };
}
