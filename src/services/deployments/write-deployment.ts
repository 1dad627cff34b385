// The shared write path of PATCH and PUT: lock the row, check If-Match, build the new
// spec and labels, admit them, check quota, and write — all in one transaction, so a
// refused write changes nothing and a conditional write cannot race another.
import { findDeploymentById, lockDeployment, updateDeployment, type DeploymentRow } from "../../../db/queries/deployments.ts";
import { DeploymentLabels, zodIssuesToFieldErrors, type DeploymentSpec } from "../../domain/deployment-spec.ts";
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import { jsonEqual } from "../../domain/merge-patch.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { admitSpec, checkQuota } from "./admit-spec.ts";
import { checkCustomCommands } from "./check-custom-commands.ts";
import { toDeployment, type WrittenDeployment } from "./deployment-view.ts";
import { checkIfMatch, findVisibleDeployment, type DeploymentAddress } from "./find-deployment.ts";
import { countGpus } from "../../domain/admission.ts";
import { clampAutoscalerReplicas, describeClamp, type ClampedRole } from "../../domain/scaling-bounds.ts";
import { actorOf, recordEvent, summarize } from "../events/record-event.ts";
import { recordAutoscalerChanges } from "./record-scaled-events.ts";
import { recordRevision } from "./record-revision.ts";
import type { Db } from "../../../db/client.ts";

export interface DeploymentWrite {
  address: DeploymentAddress;
  ifMatch?: string;
  /** Given the stored spec and labels, the raw (unvalidated) new ones. */
  build(current: { spec: DeploymentSpec; labels: Record<string, string> }): { rawSpec: unknown; rawLabels: unknown };
  /** A verb's own checks on the locked row, after If-Match, before anything is built (same transaction). */
  check?(tx: Db, current: DeploymentRow): Promise<void>;
  /** A verb's own writes after the deployment's, in the same transaction (only when something changed). */
  after?(tx: Db, written: { previous: DeploymentRow; updated: DeploymentRow; now: Date }): Promise<void>;
  /** The generation a rollback restores, recorded on the new revision. */
  rollbackOf?: number;
}

export async function writeDeployment(ctx: ServiceContext, write: DeploymentWrite): Promise<WrittenDeployment> {
  const found = await findWritableDeployment(ctx, write.address);
  let warnings: string[] = [];
  const row = await ctx.db.transaction(async (tx) => {
    const current = await lockDeployment(tx, found.id);
    if (!current) throw new NotFound(`No deployment "${write.address.idOrName}".`);
    checkIfMatch(current, write.ifMatch);
    if (current.deletionRequestedAt) {
      throw new Conflict(`Deployment "${current.name}" is being deleted; it cannot change any more.`);
    }
    await write.check?.(tx, current);
    const previous = current.spec as DeploymentSpec;
    const { rawSpec, rawLabels } = write.build({ spec: previous, labels: current.labels });
    const labels = DeploymentLabels.safeParse(rawLabels);
    if (!labels.success) {
      throw new InvalidRequest("The labels are not valid.", zodIssuesToFieldErrors(labels.error.issues, "/labels"));
    }
    const admitted = await admitSpec(tx, { name: current.name, rawSpec, previous, assignedClusterId: current.clusterId });
    warnings = admitted.warnings;
    let spec = admitted.spec;
    let clamped: ClampedRole[] = [];
    if (ctx.principal.kind === "agent") {
      checkAutoscalerChange(previous, spec, current.labels, labels.data);
      ({ spec, clamped } = clampAutoscalerReplicas(previous, spec));
      warnings = [...warnings, ...clamped.map(describeClamp)];
    }
    const specChanged = !jsonEqual(spec, previous);
    const labelsChanged = !jsonEqual(labels.data, current.labels);
    if (!specChanged && !labelsChanged) return current;
    if (specChanged) await checkCustomCommands(tx, ctx.principal, current.projectId, spec, previous);
    if (specChanged && countGpus(spec) > countGpus(previous)) {
      await checkQuota(tx, current.projectId, spec, current.id);
    }
    const now = ctx.clock.now();
    const updated = await updateDeployment(
      tx,
      current.id,
      { spec, labels: labels.data, generation: specChanged ? current.generation + 1 : current.generation },
      now,
    );
    if (updated) {
      await recordEvent(tx, now, {
        type: "deployment.updated",
        projectId: updated.projectId,
        deploymentId: updated.id,
        data: { deployment: summarize(updated), actor: writerOf(ctx), specChanged, labelsChanged },
      });
      if (specChanged) await recordRevision(tx, { row: updated, actor: writerOf(ctx), now, rollbackOf: write.rollbackOf });
      if (ctx.principal.kind === "agent") await recordAutoscalerChanges(tx, now, { previous: current, updated, actor: writerOf(ctx), clamped });
      await write.after?.(tx, { previous: current, updated, now });
    }
    return updated;
  });
  if (!row) throw new NotFound(`No deployment "${write.address.idOrName}".`);
  return { deployment: toDeployment(row), warnings };
}

/**
 * Users need an editor key. An agent credential may write too — as the autoscaler, and
 * only to deployments of its own cluster, addressed by id (docs/design.md §4).
 */
async function findWritableDeployment(ctx: ServiceContext, address: DeploymentAddress): Promise<DeploymentRow> {
  if (ctx.principal.kind === "user") {
    requireUser(ctx.principal, "editor");
    return findVisibleDeployment(ctx, address);
  }
  const row = isId("deployment", address.idOrName) ? await findDeploymentById(ctx.db, address.idOrName) : undefined;
  if (!row || row.clusterId !== ctx.principal.clusterId) {
    throw new NotFound(`No deployment "${address.idOrName}" in this agent's cluster.`);
  }
  return row;
}

/** The autoscaler changes `spec.roles[*].replicas` and nothing else. */
function checkAutoscalerChange(
  previous: DeploymentSpec,
  next: DeploymentSpec,
  previousLabels: Record<string, string>,
  nextLabels: Record<string, string>,
): void {
  const withoutReplicas = (spec: DeploymentSpec) => ({ ...spec, roles: spec.roles.map((role) => ({ ...role, replicas: 0 })) });
  if (!jsonEqual(withoutReplicas(previous), withoutReplicas(next)) || !jsonEqual(previousLabels, nextLabels)) {
    throw new Forbidden("An agent credential may change spec.roles[*].replicas only; use a user key for anything else.");
  }
}

function writerOf(ctx: ServiceContext) {
  return ctx.principal.kind === "agent" ? { kind: "autoscaler" as const, keyId: ctx.principal.credentialId } : actorOf(ctx.principal);
}
