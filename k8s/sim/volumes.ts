// PersistentVolumeClaims in the simulated cluster. Nothing provisions real volumes: a claim whose
// storage class the cluster has (SIM_STORAGE_CLASSES; "standard" is the default class, as on kind)
// is Bound at once to a generated volume `pvc-<claim uid>` with the capacity it asked for; a claim
// of any other class stays Pending, as one with no provisioner does. The volume is a host
// directory under `<workDir>/volumes/<volumeName>` that every pod mounting the claim shares; the
// VolumeController creates it when the claim binds and deletes it with the claim.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { KubeObject } from "./objects.ts";
import { resourceOf } from "./resources.ts";
import type { Store } from "./store.ts";

type Dict = Record<string, any>;

export const PVCS = resourceOf("persistentvolumeclaims");
/** Storage classes that bind claims; the first is the default class. */
export const SIM_STORAGE_CLASSES = ["standard"] as const;

export function defaultClaim(claim: Dict): void {
  const spec = (claim.spec ??= {});
  // DefaultStorageClass admission fills an unset class; "" asks for static binding only.
  if (spec.storageClassName === undefined || spec.storageClassName === null) spec.storageClassName = SIM_STORAGE_CLASSES[0];
  spec.volumeMode ??= "Filesystem";
  if (!spec.volumeName && bindable(claim) && claim.metadata?.uid) spec.volumeName = `pvc-${claim.metadata.uid}`;
}

export function bindable(claim: Dict): boolean {
  return (SIM_STORAGE_CLASSES as readonly string[]).includes(claim.spec?.storageClassName);
}

export function initialClaimStatus(claim: Dict): Dict {
  if (!bindable(claim)) return { phase: "Pending" };
  return { phase: "Bound", accessModes: claim.spec?.accessModes ?? [], capacity: { ...(claim.spec?.resources?.requests ?? {}) } };
}

/** The host directory behind a bound claim. */
export function claimDir(workDir: string, claim: KubeObject): string {
  return join(workDir, "volumes", String((claim.spec as Dict).volumeName));
}

/**
 * What kube-scheduler's VolumeBinding PreFilter says about a pod's claims
 * (pkg/scheduler/framework/plugins/volumebinding): a missing claim, or one not yet bound.
 */
export function claimsProblem(spec: Dict, namespace: string, find: (namespace: string, name: string) => KubeObject | undefined): string | undefined {
  for (const volume of (spec.volumes ?? []) as Dict[]) {
    const name = volume.persistentVolumeClaim?.claimName;
    if (!name) continue;
    const claim = find(namespace, name);
    if (!claim) return `persistentvolumeclaim "${name}" not found`;
    if (claim.metadata.deletionTimestamp) return `persistentvolumeclaim "${name}" is being deleted`;
    if ((claim.status as Dict | undefined)?.phase !== "Bound") return "pod has unbound immediate PersistentVolumeClaims";
  }
  return undefined;
}

/** Creates a bound claim's directory and removes it when the claim is deleted. */
export class VolumeController {
  #unsubscribe?: () => void;

  constructor(
    private readonly store: Store,
    private readonly workDir: string,
  ) {}

  start(): void {
    this.#unsubscribe = this.store.subscribe((change) => {
      if (change.resource !== PVCS) return;
      const claim = change.object;
      if (!(claim.spec as Dict | undefined)?.volumeName) return;
      if (change.type === "DELETED") rmSync(claimDir(this.workDir, claim), { recursive: true, force: true });
      else if ((claim.status as Dict | undefined)?.phase === "Bound") mkdirSync(claimDir(this.workDir, claim), { recursive: true });
    });
    for (const claim of this.store.list(PVCS)) {
      if ((claim.status as Dict | undefined)?.phase === "Bound" && (claim.spec as Dict).volumeName) mkdirSync(claimDir(this.workDir, claim), { recursive: true });
    }
  }

  stop(): void {
    this.#unsubscribe?.();
  }
}
