// The admission pipeline shared by create, replace and patch, in the order DESIGN §3.1
// fixes: schema (400) → defaults → admission rules and fit (422) → quota (403, last).
import type { Db } from "../../../db/client.ts";
import { findClusterById } from "../../../db/queries/clusters.ts";
import { listProjectSpecs } from "../../../db/queries/deployments.ts";
import { findProjectById, lockProject } from "../../../db/queries/projects.ts";
import { admitDeploymentSpec, countGpus, type AdmissionContext } from "../../domain/admission.ts";
import {
  applySpecDefaults,
  DeploymentSpecInput,
  zodIssuesToFieldErrors,
  type DeploymentSpec,
} from "../../domain/deployment-spec.ts";
import { InvalidRequest, InvalidSpec, NotFound, QuotaExceeded } from "../../domain/errors.ts";

export interface ClusterInventory {
  nodes?: { name: string; gpuType?: string; gpuCapacity?: number; gpuAllocatable?: number; gpuFree?: number }[];
}

/**
 * Validates and defaults a spec, then applies every admission rule; throws 400 or 422.
 * A spec the route already validated (`parsed`) is not parsed a second time.
 */
export async function admitSpec(
  db: Db,
  input: { name: string; previous?: DeploymentSpec } & ({ rawSpec: unknown } | { parsed: DeploymentSpecInput }),
): Promise<DeploymentSpec> {
  const spec = applySpecDefaults("parsed" in input ? input.parsed : parseSpec(input.rawSpec));
  const context: AdmissionContext = { previous: input.previous, cluster: await clusterCapacity(db, spec) };
  const errors = admitDeploymentSpec(input.name, spec, context);
  if (errors.length > 0) {
    throw new InvalidSpec(`The deployment spec was not admitted (${errors.length} problem${errors.length > 1 ? "s" : ""}).`, errors);
  }
  return spec;
}

function parseSpec(rawSpec: unknown): DeploymentSpecInput {
  const parsed = DeploymentSpecInput.safeParse(rawSpec);
  if (!parsed.success) {
    throw new InvalidRequest("The deployment spec is not valid.", zodIssuesToFieldErrors(parsed.error.issues, "/spec"));
  }
  return parsed.data;
}

/** The target cluster's GPUs when it has reported an inventory; unknown capacity checks nothing. */
async function clusterCapacity(db: Db, spec: DeploymentSpec): Promise<AdmissionContext["cluster"]> {
  if (!spec.clusterId) return undefined;
  const cluster = await findClusterById(db, spec.clusterId);
  if (!cluster) {
    throw new InvalidSpec("The deployment names a cluster that does not exist.", [
      { pointer: "/spec/clusterId", message: `no cluster with id "${spec.clusterId}"; list clusters with GET /v1/clusters` },
    ]);
  }
  const inventory = cluster.inventory as ClusterInventory | null;
  if (!inventory?.nodes) return undefined;
  const gpusByType: Record<string, number> = {};
  let totalGpus = 0;
  for (const node of inventory.nodes) {
    const gpus = node.gpuAllocatable ?? node.gpuCapacity ?? 0;
    totalGpus += gpus;
    if (node.gpuType) gpusByType[node.gpuType] = (gpusByType[node.gpuType] ?? 0) + gpus;
  }
  return { totalGpus, gpusByType };
}

/**
 * Refuses a spec whose GPUs, with the project's other deployments, exceed `maxGpus`.
 * Must run inside the write's transaction: with a quota it locks the project row so
 * two writes in one project cannot both take the last GPUs; without one it only keeps
 * the project from being deleted underneath the write.
 */
export async function checkQuota(tx: Db, projectId: string, spec: DeploymentSpec, exceptDeploymentId?: string): Promise<void> {
  // Choose the lock from an unlocked read and take it once: upgrading a shared lock to
  // an exclusive one in two transactions at once would deadlock. (A quota set between
  // the read and the lock is still checked below, just without the exclusive lock.)
  const unlocked = await findProjectById(tx, projectId);
  const project = await lockProject(tx, projectId, unlocked?.maxGpus === null ? "key share" : "update");
  if (!project) throw new NotFound(`No project with id "${projectId}".`);
  if (project.maxGpus === null) return;
  const others = await listProjectSpecs(tx, projectId, exceptDeploymentId);
  const used = others.reduce<number>((sum, other) => sum + countGpus(other as DeploymentSpec), 0);
  const needed = countGpus(spec);
  const available = Math.max(0, project.maxGpus - used);
  if (needed > available) {
    throw new QuotaExceeded(
      `This deployment needs ${needed} GPU(s) but project "${project.name}" has ${available} of its ${project.maxGpus} left; ` +
        `lower replicas or GPUs, delete another deployment, or ask an admin to raise maxGpus.`,
      needed,
      available,
      project.maxGpus,
    );
  }
}
