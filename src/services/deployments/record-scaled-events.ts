// The scaling history's applied half: when the autoscaler (an agent credential) changes a
// role's replicas, each changed role gets a deployment.scaled event (mode active) in the
// same transaction as the change. Its reason and signals are those of the recommendation
// the agent last wrote into status.scaling, when that recommendation is what was applied.
// Shadow recommendations arrive through POST /v1/agent/events.
import type { Db } from "../../../db/client.ts";
import type { DeploymentRow } from "../../../db/queries/deployments.ts";
import type { DeploymentSpec, DeploymentStatus } from "../../domain/deployment-spec.ts";
import type { Actor } from "../../domain/events.ts";
import { describeClamp, type ClampedRole } from "../../domain/scaling-bounds.ts";
import { recordEvent, summarize } from "../events/record-event.ts";

export async function recordAutoscalerChanges(
  tx: Db,
  now: Date,
  change: { previous: DeploymentRow; updated: DeploymentRow; actor: Actor; clamped?: readonly ClampedRole[] },
): Promise<void> {
  const { previous, updated, actor, clamped = [] } = change;
  const before = new Map((previous.spec as DeploymentSpec).roles.map((role) => [role.name, role.replicas]));
  const scaling = (previous.status as DeploymentStatus | null)?.scaling;
  for (const role of (updated.spec as DeploymentSpec).roles) {
    const from = before.get(role.name);
    if (from === undefined || from === role.replicas) continue;
    const clamp = clamped.find((c) => c.role === role.name);
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
        ...(clamp ? clampedExplanation(clamp) : recommendedExplanation(recommendation)),
      },
    });
  }
}

type Recommendation = NonNullable<DeploymentStatus["scaling"]>["roles"][number];

/** As a shadow event says it: what held the recommendation back, when something did (e.g. PdRatio pulled a role along), else why it was recommended. */
function recommendedExplanation(recommendation: Recommendation | undefined) {
  return {
    reason: recommendation ? (recommendation.limitedBy ?? recommendation.reason) : "Unexplained",
    ...(recommendation?.message !== undefined
      ? { message: recommendation.message }
      : !recommendation && { message: "replicas set by the autoscaler; status.scaling held no recommendation for this value" }),
    signals: recommendation?.signals ?? [],
  };
}

/** The agent asked for a value outside the role's bounds (its view of the spec was stale): the bound it was held to. */
function clampedExplanation(clamp: ClampedRole) {
  return { reason: clamp.limitedBy, message: describeClamp(clamp), signals: [] };
}
