// core/v1 Events as the scheduler and kubelet write them: `<object>.<hex>` names in the
// object's namespace, `involvedObject`, `source`, `reportingComponent`. Repeats of the same
// (object, type, reason, message) update one Event's `count` and `lastTimestamp`, as
// client-go's event correlator does, so a retry loop does not flood the store.
import { ApiError, timestamp, type KubeObject } from "./objects.ts";
import type { Registry } from "./registry.ts";
import { groupVersion, resourceOf, type ResourceType } from "./resources.ts";

const MAX_REMEMBERED = 4096;

export class EventRecorder {
  readonly #events: ResourceType = resourceOf("events");
  /** Aggregation key → Event name (insertion-ordered: oldest first). */
  readonly #seen = new Map<string, string>();
  #chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly registry: Registry,
    private readonly component: string,
    private readonly host?: string,
  ) {}

  /** Records an event about `object`; never throws (events are best effort, like the real recorder). */
  record(resource: ResourceType, object: KubeObject, type: "Normal" | "Warning", reason: string, message: string, fieldPath?: string): void {
    const involved = {
      kind: resource.kind,
      ...(object.metadata.namespace && { namespace: object.metadata.namespace }),
      name: object.metadata.name,
      uid: object.metadata.uid,
      apiVersion: groupVersion(resource),
      resourceVersion: object.metadata.resourceVersion,
      ...(fieldPath && { fieldPath }),
    };
    const namespace = object.metadata.namespace ?? "default";
    const key = [involved.uid, type, reason, message, fieldPath ?? ""].join("\u0000");
    this.#chain = this.#chain.then(() => this.#write(namespace, key, involved, type, reason, message)).catch(() => {});
  }

  async #write(namespace: string, key: string, involved: Record<string, unknown>, type: string, reason: string, message: string): Promise<void> {
    const now = timestamp();
    const known = this.#seen.get(key);
    const existing = known ? this.registry.find(this.#events, namespace, known) : undefined;
    try {
      if (existing) {
        await this.registry.update(
          this.#events,
          namespace,
          known!,
          { ...existing, count: ((existing.count as number | undefined) ?? 1) + 1, lastTimestamp: now, metadata: { ...existing.metadata, resourceVersion: undefined } },
          { fieldManager: this.component },
        );
        return;
      }
      const name = `${String(involved.name)}.${(Date.now() * 1e6 + Math.floor(Math.random() * 1e6)).toString(16)}`;
      await this.registry.create(
        this.#events,
        namespace,
        {
          metadata: { name, namespace },
          involvedObject: involved,
          reason,
          message,
          type,
          source: { component: this.component, ...(this.host && { host: this.host }) },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
          eventTime: null,
          reportingComponent: this.component,
          reportingInstance: this.host ?? "",
        },
        { fieldManager: this.component },
      );
      this.#seen.set(key, name);
      if (this.#seen.size > MAX_REMEMBERED) this.#seen.delete(this.#seen.keys().next().value!);
    } catch (error) {
      // A namespace being deleted refuses new events; nothing else to do about it.
      if (!(error instanceof ApiError)) throw error;
    }
  }

  /** Resolves when every event recorded so far is written. */
  flush(): Promise<void> {
    return this.#chain;
  }
}

/**
 * Deletes Events whose last occurrence is older than `ttlMs` (kube-apiserver's --event-ttl,
 * one hour), checked every `everyMs`. Returns the stop function.
 */
export function startEventExpiry(registry: Registry, ttlMs = 3_600_000, everyMs = 60_000): () => void {
  const events = resourceOf("events");
  const timer = setInterval(() => {
    const cutoff = Date.now() - ttlMs;
    for (const event of registry.store.list(events)) {
      const last = Date.parse(String(event.lastTimestamp ?? event.metadata.creationTimestamp));
      if (last < cutoff) registry.removeNow(events, event.metadata.namespace, event.metadata.name!);
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
