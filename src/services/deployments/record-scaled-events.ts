// The scaling history's applied half: when the autoscaler (an agent credential) changes a
// role's replicas, each changed role gets a deployment.scaled event (mode active) in the
// same transaction as the change. Its reason and signals are those of the recommendation
// the agent last wrote into status.scaling, when that recommendation is what was applied.
// Shadow recommendations arrive through POST /v1/agent/events.
import type { Db } from "../../../db/client.ts";
import type { DeploymentRow } from "../../../db/queries/deployments.ts";
import type { DeploymentSpec, DeploymentStatus } from "../../domain/deployment-spec.ts";
import type { Actor } from "../../domain/events.ts";
import { recordEvent, summarize } from "../events/record-event.ts";

export async function recordAutoscalerChanges(
  tx: Db,
  now: Date,
  change: { previous: DeploymentRow; updated: DeploymentRow; actor: Actor },
): Promise<void> {
  const { previous, updated, actor } = change;
  const before = new Map((previous.spec as DeploymentSpec).roles.map((role) => [role.name, role.replicas]));
  const scaling = (previous.status as DeploymentStatus | null)?.scaling;
  for (const role of (updated.spec as DeploymentSpec).roles) {
    const from = before.get(role.name);
    if (from === undefined || from === role.replicas) continue;
    const recommendation = scaling?.roles.find((r) => r.name === role.name && (r.desired ?? r.recommended) === role.replicas);
    await recordEvent(tx, now, {
      type: "deployment.scaled",
      projectId: updated.projectId,
      deploymentId: updated.id,
      data: {
        deployment: summarize(updated),
        actor,
        role: role.name,
        from,
        to: role.replicas,
        mode: "active",
        // As a shadow event says it: what held the recommendation back, when something did
        // (e.g. PdRatio pulled a role along), else why it was recommended.
        reason: recommendation ? (recommendation.limitedBy ?? recommendation.reason) : "Unexplained",
        ...(recommendation?.message !== undefined
          ? { message: recommendation.message }
          : !recommendation && { message: "replicas set by the autoscaler; status.scaling held no recommendation for this value" }),
        signals: recommendation?.signals ?? [],
      },
    });
  }
}
