// POST /v1/deployments/{id}/roles/{role}/resize: changes an elastic role's DP width through
// the PATCH write path (If-Match, admission, quota and capacity at the new width, generation,
// deployment.updated) and records the Operation the agent carries out (Pending, params
// { fromWidth, toWidth }) in the same transaction. One resize of a role at a time. Asking again
// for the width the spec already holds is a retry when the last resize to it failed or was
// aborted (the engine still runs the old width): a new operation, the spec unchanged.
import { lockDeployment } from "../../../db/queries/deployments.ts";
import { findActiveOperation, findLatestOperation, insertOperation, type OperationRow } from "../../../db/queries/operations.ts";
import type { DeploymentSpec } from "../../domain/deployment-spec.ts";
import { Conflict, InvalidSpec, NotFound } from "../../domain/errors.ts";
import { newId } from "../../domain/ids.ts";
import type { Operation } from "../../domain/operations.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import type { Db } from "../../../db/client.ts";
import { toOperation } from "../operations/operation-view.ts";
import type { DeploymentAddress } from "./find-deployment.ts";
import { writeDeployment } from "./write-deployment.ts";

/** The step an API-recorded resize waits in until the agent takes it. */
export const RESIZE_REQUESTED_STEP = "Requested";

export async function resizeDeploymentRole({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { address: DeploymentAddress; role: string; width: number; ifMatch?: string };
}): Promise<Operation> {
  requireUser(ctx.principal, "editor");
  const { role, width } = input;
  let fromWidth = 0;
  let operation: OperationRow | undefined;
  let retryOf: OperationRow | undefined;
  await writeDeployment(ctx, {
    address: input.address,
    ifMatch: input.ifMatch,
    check: async (tx, current) => {
      const spec = current.spec as DeploymentSpec;
      const index = spec.roles.findIndex((r) => r.name === role);
      if (index < 0) {
        throw new NotFound(`No role "${role}" in deployment "${current.name}"; its roles are ${spec.roles.map((r) => r.name).join(", ")}.`);
      }
      const elastic = spec.roles[index]!.elastic;
      if (!elastic) {
        throw new InvalidSpec(`Role "${role}" is not elastic, so it has no width to resize.`, [
          {
            pointer: `/spec/roles/${index}/elastic`,
            message: `role "${role}" has no elastic section; resize changes elastic.width of an elastic EP role (change replicas with PATCH instead)`,
          },
        ]);
      }
      if (width < 2 || width > elastic.maxWidth) {
        throw new InvalidSpec("The width is outside what the role allows.", [
          { pointer: "/width", message: `width ${width} must be within 2..maxWidth (${elastic.maxWidth}) of role "${role}"` },
        ]);
      }
      const active = await findActiveOperation(tx, { deploymentId: current.id, kind: "resize", role });
      if (active) throw resizeInFlight(role, active);
      if (width === elastic.width) {
        const latest = await findLatestOperation(tx, { deploymentId: current.id, kind: "resize", role });
        const target = (latest?.params as { toWidth?: number } | null)?.toWidth;
        if (!latest || target !== width || latest.phase === "Succeeded") {
          throw new Conflict(`Role "${role}" already has width ${width}; there is nothing to resize.`, { currentWidth: width });
        }
        retryOf = latest;
        fromWidth = Number((latest.params as { fromWidth?: number }).fromWidth);
        return;
      }
      fromWidth = elastic.width;
    },
    build: ({ spec, labels }) => ({
      rawSpec: { ...spec, roles: spec.roles.map((r) => (r.name === role && r.elastic ? { ...r, elastic: { ...r.elastic, width } } : r)) },
      rawLabels: labels,
    }),
    after: async (tx, { updated, now }) => {
      operation = await recordResize(tx, { deploymentId: updated.id, projectId: updated.projectId, role, fromWidth, width, now });
    },
  });
  if (retryOf) {
    // The spec already says `width`, so the write above changed nothing and recorded nothing.
    const last = retryOf;
    operation = await ctx.db.transaction(async (tx) => {
      await lockDeployment(tx, last.deploymentId);
      const now = ctx.clock.now();
      return recordResize(tx, { deploymentId: last.deploymentId, projectId: last.projectId, role, fromWidth, width, now, retryOf: last.id });
    });
  }
  return toOperation(operation!);
}

/** Records the Pending resize the agent carries out; 409 naming the active one if there is one. */
async function recordResize(
  tx: Db,
  input: { deploymentId: string; projectId: string; role: string; fromWidth: number; width: number; now: Date; retryOf?: string },
): Promise<OperationRow> {
  const { deploymentId, projectId, role, fromWidth, width, now, retryOf } = input;
  const operation = await insertOperation(tx, {
    id: newId("operation"),
    deploymentId,
    projectId,
    kind: "resize",
    role,
    replica: null,
    phase: "Pending",
    step: RESIZE_REQUESTED_STEP,
    params: { fromWidth, toWidth: width, ...(retryOf ? { retryOf } : {}) },
    steps: [{ name: RESIZE_REQUESTED_STEP, startedAt: now.toISOString() }],
    message: `resize of role "${role}" from ${fromWidth} to ${width} ranks ${retryOf ? `requested again after ${retryOf}` : "requested"}; waiting for the agent`,
    progress: null,
    result: null,
    error: null,
    startedAt: now,
    finishedAt: null,
    createdAt: now,
    updatedAt: now,
  });
  if (!operation) {
    const active = await findActiveOperation(tx, { deploymentId, kind: "resize", role });
    throw resizeInFlight(role, active ?? { id: "unknown", phase: "Pending" });
  }
  return operation;
}

function resizeInFlight(role: string, active: { id: string; phase: string }): Conflict {
  return new Conflict(
    `A resize of role "${role}" is already ${active.phase} (${active.id}); wait for it to finish (GET /v1/operations/${active.id}).`,
    { existingOperationId: active.id },
  );
}
