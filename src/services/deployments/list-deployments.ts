import { listDeployments as selectDeployments } from "../../../db/queries/deployments.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import type { Deployment } from "../../domain/deployment.ts";
import { InvalidRequest } from "../../domain/errors.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toDeployment } from "./deployment-view.ts";

export interface ListDeploymentsInput {
  limit: number;
  cursor?: string;
  phase?: string;
  projectId?: string;
  /** `key=value` selectors, all of which must match. */
  label?: string[];
}

export async function listDeployments({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: ListDeploymentsInput;
}): Promise<{ items: Deployment[]; nextCursor: string | null }> {
  const user = requireUser(ctx.principal);
  const projectId = user.projectId ?? input.projectId;
  if (user.projectId !== null && input.projectId !== undefined && input.projectId !== user.projectId) {
    return { items: [], nextCursor: null };
  }
  const rows = await selectDeployments(ctx.db, {
    projectId,
    phase: input.phase,
    labels: parseLabelSelectors(input.label ?? []),
    cursor: decodeCursor(input.cursor),
    limit: input.limit + 1,
  });
  return pageOf(rows, input.limit, toDeployment);
}

function parseLabelSelectors(selectors: string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const selector of selectors) {
    const at = selector.indexOf("=");
    if (at <= 0) {
      throw new InvalidRequest("A label filter is not key=value.", [
        { parameter: "label", message: `"${selector}" is not key=value; e.g. ?label=team=search` },
      ]);
    }
    labels[selector.slice(0, at)] = selector.slice(at + 1);
  }
  return labels;
}
