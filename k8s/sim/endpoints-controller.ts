// Endpoints and EndpointSlices of every Service with a selector: the addresses of the pods it
// selects, ready ones apart from not-ready ones (publishNotReadyAddresses counts all as ready),
// terminating pods left out of Endpoints and marked terminating in the slice. Named target
// ports resolve per pod through its container ports. The service proxy reads the Endpoints.
import { ApiError, safeEncode, type KubeObject } from "./objects.ts";
import { deepEqual } from "./patch.ts";
import type { Registry } from "./registry.ts";
import { resourceOf } from "./resources.ts";
import type { Store } from "./store.ts";
import { fnv1a64 } from "../render/spec-hash.ts";
import { WorkQueue } from "./work-queue.ts";

type Dict = Record<string, any>;

const SERVICES = resourceOf("services");
const PODS = resourceOf("pods");
const ENDPOINTS = resourceOf("endpoints");
const SLICES = resourceOf("endpointslices", "discovery.k8s.io");

export const sliceName = (service: string) => `${service}-${safeEncode(fnv1a64(service), 5)}`;

function resolveTargetPort(pod: KubeObject, targetPort: number | string): number | undefined {
  if (typeof targetPort === "number") return targetPort;
  if (/^\d+$/.test(targetPort)) return Number(targetPort);
  for (const container of ((pod.spec as Dict).containers ?? []) as Dict[]) {
    const port = (container.ports ?? []).find((p: Dict) => p.name === targetPort);
    if (port) return port.containerPort;
  }
  return undefined;
}

const isReady = (pod: KubeObject) => ((pod.status as Dict | undefined)?.conditions ?? []).some((c: Dict) => c.type === "Ready" && c.status === "True");
const selects = (selector: Record<string, string>, pod: KubeObject) => Object.entries(selector).every(([k, v]) => pod.metadata.labels?.[k] === v);

export class EndpointsController {
  readonly #queue: WorkQueue;
  #unsubscribe?: () => void;

  constructor(
    private readonly store: Store,
    private readonly registry: Registry,
  ) {
    this.#queue = new WorkQueue((key) => this.#reconcile(key), "endpoints-controller");
  }

  start(): void {
    this.#unsubscribe = this.store.subscribe((change) => {
      const { object } = change;
      if (change.resource === SERVICES) this.#queue.add(`${object.metadata.namespace}/${object.metadata.name}`);
      else if (change.resource === PODS) {
        for (const service of this.store.list(SERVICES, object.metadata.namespace)) {
          const selector = (service.spec as Dict).selector;
          if (!selector) continue;
          if (selects(selector, object) || (change.previous && selects(selector, change.previous))) {
            this.#queue.add(`${service.metadata.namespace}/${service.metadata.name}`);
          }
        }
      }
    });
    for (const service of this.store.list(SERVICES)) this.#queue.add(`${service.metadata.namespace}/${service.metadata.name}`);
  }

  async #reconcile(key: string): Promise<void> {
    const [namespace, name] = key.split("/") as [string, string];
    const service = this.store.get(SERVICES, namespace, name);
    if (!service || service.metadata.deletionTimestamp) {
      for (const [resource, objectName] of [[ENDPOINTS, name], [SLICES, sliceName(name)]] as const) {
        try {
          if (this.store.get(resource, namespace, objectName)) await this.registry.delete(resource, namespace, objectName);
        } catch (error) {
          if (!(error instanceof ApiError && error.code === 404)) throw error;
        }
      }
      return;
    }
    const spec = service.spec as Dict;
    if (!spec.selector) return;
    const publishNotReady = spec.publishNotReadyAddresses === true;
    const pods = this.store.list(PODS, namespace).filter((pod) => selects(spec.selector, pod) && (pod.status as Dict | undefined)?.podIP);
    const ports: Dict[] = spec.ports ?? [];

    // Endpoints: pods grouped into subsets by their resolved port numbers.
    const subsets = new Map<string, { addresses: Dict[]; notReadyAddresses: Dict[]; ports: Dict[] }>();
    const sliceEndpoints: Dict[] = [];
    let slicePorts: Dict[] | undefined;
    for (const pod of pods) {
      const terminating = pod.metadata.deletionTimestamp !== undefined;
      const ready = isReady(pod);
      const resolved = ports.map((p) => ({ name: p.name, port: resolveTargetPort(pod, p.targetPort ?? p.port), protocol: p.protocol ?? "TCP" }));
      if (resolved.some((p) => p.port === undefined)) continue;
      const address = {
        ip: (pod.status as Dict).podIP,
        ...((pod.spec as Dict).hostname && (pod.spec as Dict).subdomain === name && { hostname: (pod.spec as Dict).hostname }),
        nodeName: (pod.spec as Dict).nodeName,
        targetRef: { kind: "Pod", namespace, name: pod.metadata.name, uid: pod.metadata.uid },
      };
      slicePorts ??= resolved.map((p) => ({ ...(p.name && { name: p.name }), port: p.port, protocol: p.protocol }));
      sliceEndpoints.push({
        addresses: [address.ip],
        conditions: { ready: ready && !terminating, serving: ready, terminating },
        ...(address.hostname && { hostname: address.hostname }),
        targetRef: address.targetRef,
        nodeName: address.nodeName,
      });
      if (terminating && !publishNotReady) continue;
      const subsetKey = JSON.stringify(resolved);
      let subset = subsets.get(subsetKey);
      if (!subset) subsets.set(subsetKey, (subset = { addresses: [], notReadyAddresses: [], ports: resolved.map((p) => ({ ...(p.name && { name: p.name }), port: p.port, protocol: p.protocol })) }));
      (ready || publishNotReady ? subset.addresses : subset.notReadyAddresses).push(address);
    }
    const endpoints: KubeObject = {
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { name, namespace, labels: { ...service.metadata.labels, "endpoints.kubernetes.io/managed-by": "endpoint-controller" } },
      subsets: [...subsets.values()].map((s) => ({
        ...(s.addresses.length > 0 && { addresses: s.addresses }),
        ...(s.notReadyAddresses.length > 0 && { notReadyAddresses: s.notReadyAddresses }),
        ports: s.ports,
      })),
    };
    const slice: KubeObject = {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: sliceName(name),
        namespace,
        labels: { ...service.metadata.labels, "kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" },
        ownerReferences: [{ apiVersion: "v1", kind: "Service", name, uid: service.metadata.uid!, controller: true, blockOwnerDeletion: true }],
      },
      addressType: "IPv4",
      endpoints: sliceEndpoints,
      ports: slicePorts ?? ports.map((p) => ({ ...(p.name && { name: p.name }), port: typeof p.targetPort === "number" ? p.targetPort : p.port, protocol: p.protocol ?? "TCP" })),
    };
    await this.#write(ENDPOINTS, endpoints, "endpoint-controller");
    await this.#write(SLICES, slice, "endpointslice-controller");
  }

  async #write(resource: typeof ENDPOINTS, object: KubeObject, manager: string): Promise<void> {
    const existing = this.store.get(resource, object.metadata.namespace, object.metadata.name!);
    if (existing) {
      const { metadata: _m, ...wanted } = object;
      const { metadata: _e, ...current } = existing;
      if (deepEqual({ ...wanted, labels: object.metadata.labels }, { ...current, labels: existing.metadata.labels })) return;
    }
    try {
      await this.registry.upsert(resource, object, manager);
    } catch (error) {
      // The namespace is going away (403) or the Service just went (404): nothing to publish.
      if (!(error instanceof ApiError && (error.code === 403 || error.code === 404))) throw error;
    }
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#queue.close();
  }
}
