// The shared volume of a vLLM EPD deployment: encoders (ec_producer) write their outputs to it and
// prefills (ec_consumer) read them (the shared-storage EC connector, engine-vllm.ts mounts it at
// /ec-cache on both). One ReadWriteMany claim `<deployment>-ec-cache` per deployment, because
// encode and prefill pods land on different nodes; its storage class and size come from the
// agent's configuration (RenderOptions.ecCache), not from the deployment spec.
import type { V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { ecCacheClaimName } from "./engine-vllm.ts";
import { LABELS, MANAGED_BY, namespaceName } from "./names.ts";
import type { RenderInput } from "./types.ts";

/** Size of the claim when the agent's configuration names none. */
export const DEFAULT_EC_CACHE_SIZE = "10Gi";

/** Whether a deployment shares encoder outputs through the claim (vLLM with an encode role). */
export function needsEcCache(input: RenderInput): boolean {
  const { spec } = input.deployment;
  return spec.engine.name === "vllm" && spec.roles.some((role) => role.kind === "encode");
}

export function renderClaims(input: RenderInput): V1PersistentVolumeClaim[] {
  if (!needsEcCache(input)) return [];
  const { deployment, options } = input;
  const storageClassName = options.ecCache?.storageClassName;
  return [
    {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: {
        name: ecCacheClaimName(deployment.name),
        namespace: namespaceName(deployment.projectName),
        labels: {
          [LABELS.managedBy]: MANAGED_BY,
          [LABELS.deployment]: deployment.name,
          [LABELS.deploymentId]: deployment.id,
          [LABELS.component]: "ec-cache",
        },
      },
      spec: {
        accessModes: ["ReadWriteMany"],
        resources: { requests: { storage: options.ecCache?.size ?? DEFAULT_EC_CACHE_SIZE } },
        // Unset: the cluster's default class (DefaultStorageClass admission fills it in).
        ...(storageClassName !== undefined && { storageClassName }),
      },
    },
  ];
}
