// Addressing a deployment by id (dep_…) or by name. A project-bound key looks in its
// project; an installation key may add ?projectId=, and a name found in several
// projects without it is a 409 that names them. Others' deployments are "not found".
import type { Db } from "../../../db/client.ts";
import { findDeploymentById, findDeploymentsByName, type DeploymentRow } from "../../../db/queries/deployments.ts";
import { Conflict, InvalidRequest, NotFound, PreconditionFailed } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import { canSeeProject, requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { etagOf } from "./deployment-view.ts";

export interface DeploymentAddress {
  idOrName: string;
  projectId?: string;
}

const NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

export async function findVisibleDeployment(ctx: ServiceContext, address: DeploymentAddress): Promise<DeploymentRow> {
  return findDeploymentIn(ctx.db, ctx, address);
}

/** Same as findVisibleDeployment, but reads through `db` (a transaction, for instance). */
export async function findDeploymentIn(db: Db, ctx: ServiceContext, address: DeploymentAddress): Promise<DeploymentRow> {
  const user = requireUser(ctx.principal);
  const { idOrName } = address;
  const notFound = () => new NotFound(`No deployment "${idOrName}"${address.projectId ? ` in project "${address.projectId}"` : ""}.`);
  if (idOrName.startsWith("dep_")) {
    if (!isId("deployment", idOrName)) throw notFound();
    const row = await findDeploymentById(db, idOrName);
    if (!row || !canSeeProject(user, row.projectId)) throw notFound();
    if (address.projectId && row.projectId !== address.projectId) throw notFound();
    return row;
  }
  if (!NAME.test(idOrName)) {
    throw new InvalidRequest("The path names neither a deployment id nor a deployment name.", [
      { parameter: "idOrName", message: "must be a deployment id (dep_…) or a DNS-1035 name of at most 63 characters" },
    ]);
  }
  const projectId = user.projectId ?? address.projectId;
  const rows = await findDeploymentsByName(db, idOrName, projectId);
  if (rows.length === 0) throw notFound();
  if (rows.length > 1) {
    const projects = rows.map((row) => row.projectId).sort();
    throw new Conflict(
      `A deployment named "${idOrName}" exists in several projects (${projects.join(", ")}); add ?projectId= or use its id.`,
      { projectIds: projects },
    );
  }
  return rows[0]!;
}

/** If-Match against the row's resourceVersion; `*` matches any existing row. Weak tags compare equal. */
export function checkIfMatch(row: DeploymentRow, ifMatch: string | undefined): void {
  if (ifMatch === undefined) return;
  const current = etagOf(row.resourceVersion);
  const tags = ifMatch.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
  if (tags.includes("*") || tags.includes(current)) return;
  throw new PreconditionFailed(
    `The deployment changed since you read it (now ${current}); GET it again, reapply your change and retry.`,
    current,
  );
}
