// SQL for the latest engine signals of each deployment: one row per deployment, overwritten.
import { eq } from "drizzle-orm";
import type { Db } from "../client.ts";
import { deploymentMetrics } from "../schema.ts";

export type DeploymentMetricsRow = typeof deploymentMetrics.$inferSelect;

export async function upsertDeploymentMetrics(db: Db, row: DeploymentMetricsRow): Promise<DeploymentMetricsRow> {
  const [stored] = await db
    .insert(deploymentMetrics)
    .values(row)
    .onConflictDoUpdate({
      target: deploymentMetrics.deploymentId,
      set: { observedAt: row.observedAt, receivedAt: row.receivedAt, roles: row.roles },
    })
    .returning();
  return stored!;
}

export async function findDeploymentMetrics(db: Db, deploymentId: string): Promise<DeploymentMetricsRow | undefined> {
  const [row] = await db.select().from(deploymentMetrics).where(eq(deploymentMetrics.deploymentId, deploymentId));
  return row;
}
