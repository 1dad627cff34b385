// Every write that takes a new generation records its spec here, in its own transaction,
// so the revision history holds exactly the specs the deployment had (docs/design.md §3.1).
import type { Db } from "../../../db/client.ts";
import type { DeploymentRow } from "../../../db/queries/deployments.ts";
import { insertRevision } from "../../../db/queries/revisions.ts";
import type { Actor } from "../../domain/events.ts";
import { REVISIONS_RETAINED } from "../../domain/revisions.ts";

export async function recordRevision(
  tx: Db,
  input: { row: DeploymentRow; actor: Actor; now: Date; rollbackOf?: number },
): Promise<void> {
  const { row, actor, now, rollbackOf } = input;
  await insertRevision(
    tx,
    { deploymentId: row.id, generation: row.generation, spec: row.spec, actor, rollbackOf: rollbackOf ?? null, createdAt: now },
    REVISIONS_RETAINED,
  );
}
