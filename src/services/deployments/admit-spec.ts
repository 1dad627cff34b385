// The admission pipeline shared by create, replace and patch, in the order docs/design.md §3.1
// fixes: schema (400) → defaults → admission rules, fit and the engine-release gate (422) → quota (403, last).
import type { Db } from "../../../db/client.ts";
import { findClusterById, listClusters, type ClusterRow } from "../../../db/queries/clusters.ts";
import { listProjectSpecs } from "../../../db/queries/deployments.ts";
import { findProjectById, lockProject } from "../../../db/queries/projects.ts";
import { admitDeploymentSpec, countGpus, type AdmissionContext } from "../../domain/admission.ts";
import { checkEngineCompatibility } from "../../domain/engine-gate.ts";
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

export interface Admitted {
  spec: DeploymentSpec;
  /** The cluster the deployment runs on; null while no cluster exists (the first to register takes it). */
  clusterId: string | null;
  /** Accepted with reservations (an unreadable image tag, a known engine failure): for the response's `warnings[]`. */
  warnings: string[];
}

/**
 * Validates and defaults a spec, picks its cluster, then applies every admission rule;
 * throws 400 or 422. A spec the route already validated (`parsed`) is not parsed again.
 * On update, `assignedClusterId` is the cluster the deployment already runs on.
 */
export async function admitSpec(
  db: Db,
  input: { name: string; previous?: DeploymentSpec; assignedClusterId?: string | null } & (
    | { rawSpec: unknown }
    | { parsed: DeploymentSpecInput }
  ),
): Promise<Admitted> {
  const spec = applySpecDefaults("parsed" in input ? input.parsed : parseSpec(input.rawSpec));
  const cluster = await targetCluster(db, spec, input.assignedClusterId ?? null);
  const context: AdmissionContext = { previous: input.previous, cluster: cluster && capacityOf(cluster) };
  const engine = checkEngineCompatibility(spec, input.previous);
  const errors = [...admitDeploymentSpec(input.name, spec, context), ...engine.errors];
  if (errors.length > 0) {
    throw new InvalidSpec(`The deployment spec was not admitted (${errors.length} problem${errors.length > 1 ? "s" : ""}).`, errors);
  }
  return { spec, clusterId: cluster?.id ?? null, warnings: engine.warnings };
}

function parseSpec(rawSpec: unknown): DeploymentSpecInput {
  const parsed = DeploymentSpecInput.safeParse(rawSpec);
  if (!parsed.success) {
    throw new InvalidRequest("The deployment spec is not valid.", zodIssuesToFieldErrors(parsed.error.issues, "/spec"));
  }
  return parsed.data;
}

const clusterProblem = (message: string) =>
  new InvalidSpec("The deployment's cluster cannot be chosen.", [{ pointer: "/spec/clusterId", message }]);

/**
 * Where the deployment runs: the cluster it already runs on, else `spec.clusterId`, else
 * the only cluster there is. With several clusters `spec.clusterId` is required; with
 * none the deployment waits unassigned.
 */
async function targetCluster(db: Db, spec: DeploymentSpec, assigned: string | null): Promise<ClusterRow | undefined> {
  if (assigned) {
    if (spec.clusterId && spec.clusterId !== assigned) {
      throw clusterProblem(`the deployment runs on cluster "${assigned}" and cannot move; create a new deployment instead`);
    }
    return findClusterById(db, assigned);
  }
  if (spec.clusterId) {
    const cluster = await findClusterById(db, spec.clusterId);
    if (!cluster) throw clusterProblem(`no cluster with id "${spec.clusterId}"; list clusters with GET /v1/clusters`);
    return cluster;
  }
  const clusters = await listClusters(db, { limit: 2 });
  if (clusters.length > 1) {
    throw clusterProblem(
      "required when several clusters exist; list them with GET /v1/clusters and name one (a project-bound key lists only the clusters its project runs on: ask an installation admin for another)",
    );
  }
  return clusters[0];
}

/** The cluster's GPUs when its agent has reported an inventory; unknown capacity checks nothing. */
function capacityOf(cluster: ClusterRow): AdmissionContext["cluster"] {
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
