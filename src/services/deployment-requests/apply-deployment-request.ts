// Apply: creates the chosen candidate's deployment through the ordinary create-deployment
// service (same admission, quota and events), linked both ways: the request's status names the
// deployment, the deployment's label names the request. Idempotent: applying an applied request
// returns it unchanged; a create that already happened (a concurrent or interrupted apply) is
// recognised by that label and adopted instead of failing on the name.
import { findDeploymentsByName } from "../../../db/queries/deployments.ts";
import { lockDeploymentRequest, updateDeploymentRequestStatus, type DeploymentRequestRow } from "../../../db/queries/deployment-requests.ts";
import { REQUEST_LABEL, type ApplyRequest, type DeploymentRequestResource, type DeploymentRequestStatus } from "../../domain/deployment-request.ts";
import { Conflict, InvalidSpec, NotFound } from "../../domain/errors.ts";
import type { ServiceContext } from "../context.ts";
import { createDeployment } from "../deployments/create-deployment.ts";
import { actorOf, recordEvent } from "../events/record-event.ts";
import { summarizeRequest, toDeploymentRequest } from "./deployment-request-view.ts";
import { findVisibleDeploymentRequest } from "./find-deployment-request.ts";

/** The applied request, and admission's warnings about the deployment it created (none when it created nothing). */
export interface AppliedRequest {
  request: DeploymentRequestResource;
  warnings: string[];
}

export async function applyDeploymentRequest({ ctx, input }: { ctx: ServiceContext; input: { id: string } & ApplyRequest }): Promise<AppliedRequest> {
  const found = await findVisibleDeploymentRequest(ctx, input.id, "editor");
  const status = found.status as DeploymentRequestStatus;
  if (found.deploymentId) return { request: alreadyApplied(found, input.candidate), warnings: [] };
  if (status.phase === "Failed") {
    throw new Conflict(`Deployment request "${found.name}" failed planning (${status.reason ?? "no candidate"}); there is nothing to apply. Create a new request with a looser SLA or more GPUs.`);
  }
  const rank = input.candidate ?? 1;
  const candidate = status.candidates.find((c) => c.rank === rank);
  if (!candidate) {
    throw new InvalidSpec(`Deployment request "${found.name}" has no candidate ${rank}.`, [
      { pointer: "/candidate", message: `must be the rank of a listed candidate (1–${status.candidates.length})` },
    ]);
  }

  // Deploying: visible to readers while the deployment is created.
  const started = await setStatus(ctx, found.id, (row, current) => (row.deploymentId ? undefined : { ...current, phase: "Deploying", selected: rank, deploymentId: undefined }));
  if (started.deploymentId) return { request: alreadyApplied(started, input.candidate), warnings: [] };

  let deploymentId: string;
  let warnings: string[] = [];
  try {
    const created = await createDeployment({
      ctx,
      input: { name: found.name, projectId: found.projectId, labels: { [REQUEST_LABEL]: found.id }, spec: candidate.spec },
    });
    deploymentId = created.deployment.id;
    warnings = created.warnings;
  } catch (error) {
    const adopted = error instanceof Conflict ? await ownDeployment(ctx, found) : undefined;
    if (!adopted) {
      // Back to Ready, so the user can fix the cause (quota, a taken name) and apply again.
      await setStatus(ctx, found.id, (row, current) => (row.deploymentId ? undefined : { ...current, phase: "Ready", selected: undefined, deploymentId: undefined }));
      throw error instanceof Conflict
        ? new Conflict(`A deployment named "${found.name}" already exists in this project and was not created by this request; delete or rename it, then apply again.`)
        : error;
    }
    deploymentId = adopted;
  }

  let firstToLink = false;
  const linked = await setStatus(
    ctx,
    found.id,
    (row, current) => {
      if (row.deploymentId) return undefined;
      firstToLink = true;
      return { ...current, phase: "Deployed", selected: rank, deploymentId };
    },
    deploymentId,
    async (tx, row) => {
      if (!firstToLink) return;
      await recordEvent(tx, ctx.clock.now(), {
        type: "request.deployed",
        projectId: row.projectId,
        deploymentId,
        data: { request: summarizeRequest(row), deploymentId, candidate: rank, actor: actorOf(ctx.principal) },
      });
    },
  );
  return { request: toDeploymentRequest(linked), warnings };
}

function alreadyApplied(row: DeploymentRequestRow, candidate: number | undefined): DeploymentRequestResource {
  const selected = (row.status as DeploymentRequestStatus).selected;
  if (candidate !== undefined && selected !== undefined && candidate !== selected) {
    throw new Conflict(`Deployment request "${row.name}" was applied with candidate ${selected}; edit deployment ${row.deploymentId} or create a new request.`);
  }
  return toDeploymentRequest(row);
}

/** The deployment of this request's name if its label says this request created it. */
async function ownDeployment(ctx: ServiceContext, request: DeploymentRequestRow): Promise<string | undefined> {
  const [existing] = await findDeploymentsByName(ctx.db, request.name, request.projectId);
  return existing && existing.labels[REQUEST_LABEL] === request.id ? existing.id : undefined;
}

/**
 * Locks the request and writes the status `change` returns (undefined: leave it), in one
 * transaction with `after`. Answers the row as it stands afterwards.
 */
async function setStatus(
  ctx: ServiceContext,
  id: string,
  change: (row: DeploymentRequestRow, current: DeploymentRequestStatus) => DeploymentRequestStatus | undefined,
  deploymentId?: string,
  after?: (tx: ServiceContext["db"], row: DeploymentRequestRow) => Promise<void>,
): Promise<DeploymentRequestRow> {
  return ctx.db.transaction(async (tx) => {
    const row = await lockDeploymentRequest(tx, id);
    if (!row) throw new NotFound(`No deployment request "${id}".`);
    const next = change(row, row.status as DeploymentRequestStatus);
    if (!next) return row;
    const clean = JSON.parse(JSON.stringify(next)) as DeploymentRequestStatus; // drops the keys set to undefined
    const updated = await updateDeploymentRequestStatus(tx, id, { status: clean, phase: clean.phase, deploymentId: deploymentId ?? row.deploymentId }, ctx.clock.now());
    await after?.(tx, updated!);
    return updated!;
  });
}
