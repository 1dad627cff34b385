// Objects by resource type under one global resourceVersion (etcd's revision), and the recent
// change history that watches resume from. Invariants: every committed change takes the next
// resourceVersion and is recorded once, in order; stored objects are frozen (writers commit new
// objects, never edit stored ones); a watch from a resourceVersion older than the oldest kept
// change cannot be served (410 Expired: the client relists), as after an etcd compaction.
import { deepFreeze, metaKey, type KubeObject } from "./objects.ts";
import { resourceKey, type ResourceType } from "./resources.ts";

export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

export interface Change {
  type: ChangeType;
  resourceVersion: number;
  resource: ResourceType;
  object: KubeObject;
  /** The object before this change (MODIFIED and DELETED). */
  previous?: KubeObject;
}

export type ChangeListener = (change: Change) => void;

export class Store {
  #revision = 0;
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #history: Change[] = [];
  #historyStart = 0;
  /** Changes at or below this resourceVersion are no longer kept. */
  #compacted = 0;
  readonly #listeners = new Set<ChangeListener>();

  constructor(private readonly historySize = 10_000) {}

  get resourceVersion(): number {
    return this.#revision;
  }

  /** The oldest resourceVersion a watch can still start from. */
  get compactedResourceVersion(): number {
    return this.#compacted;
  }

  #bucket(resource: ResourceType): Map<string, KubeObject> {
    const key = resourceKey(resource);
    let bucket = this.#objects.get(key);
    if (!bucket) this.#objects.set(key, (bucket = new Map()));
    return bucket;
  }

  get(resource: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#bucket(resource).get(metaKey(resource.namespaced ? namespace : undefined, name));
  }

  /** Stored objects of a type (all namespaces when `namespace` is undefined), ordered by namespace and name. */
  list(resource: ResourceType, namespace?: string): KubeObject[] {
    const items = [...this.#bucket(resource).values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace);
    return items.sort((a, b) => metaKey(a.metadata.namespace, a.metadata.name!).localeCompare(metaKey(b.metadata.namespace, b.metadata.name!)));
  }

  /** Every object in a namespace, of every namespaced type. */
  inNamespace(namespace: string, types: readonly ResourceType[]): { resource: ResourceType; object: KubeObject }[] {
    return types.filter((t) => t.namespaced).flatMap((resource) => this.list(resource, namespace).map((object) => ({ resource, object })));
  }

  /** Commits an object (created or replaced): takes the next resourceVersion, freezes and records it. */
  put(resource: ResourceType, object: KubeObject): KubeObject {
    const bucket = this.#bucket(resource);
    const key = metaKey(resource.namespaced ? object.metadata.namespace : undefined, object.metadata.name!);
    const previous = bucket.get(key);
    const revision = ++this.#revision;
    const stored = deepFreeze({ ...object, metadata: { ...object.metadata, resourceVersion: String(revision) } });
    bucket.set(key, stored);
    this.#record({ type: previous ? "MODIFIED" : "ADDED", resourceVersion: revision, resource, object: stored, ...(previous && { previous }) });
    return stored;
  }

  /** Removes an object; the DELETED change carries it at a new resourceVersion, as etcd's delete does. */
  remove(resource: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const bucket = this.#bucket(resource);
    const key = metaKey(resource.namespaced ? namespace : undefined, name);
    const previous = bucket.get(key);
    if (!previous) return undefined;
    bucket.delete(key);
    const revision = ++this.#revision;
    const object = deepFreeze({ ...previous, metadata: { ...previous.metadata, resourceVersion: String(revision) } });
    this.#record({ type: "DELETED", resourceVersion: revision, resource, object, previous });
    return object;
  }

  #record(change: Change): void {
    this.#history.push(change);
    if (this.#history.length - this.#historyStart > this.historySize) {
      this.#compacted = this.#history[this.#historyStart]!.resourceVersion;
      this.#historyStart++;
      // Drop the consumed prefix in batches so trimming stays O(1) amortized.
      if (this.#historyStart > 1024) {
        this.#history.splice(0, this.#historyStart);
        this.#historyStart = 0;
      }
    }
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (error) {
        // A listener only queues work; one that throws must not undo a committed change.
        process.stderr.write(`berth-sim store: change listener failed: ${(error as Error).stack ?? String(error)}\n`);
      }
    }
  }

  /** Changes after `resourceVersion`, or undefined when some of them are no longer kept. */
  changesSince(resourceVersion: number): Change[] | undefined {
    if (resourceVersion < this.#compacted) return undefined;
    const out: Change[] = [];
    for (let i = this.#history.length - 1; i >= this.#historyStart; i--) {
      const change = this.#history[i]!;
      if (change.resourceVersion <= resourceVersion) break;
      out.push(change);
    }
    return out.reverse();
  }

  /** Calls `listener` synchronously after every commit; returns the unsubscribe function. */
  subscribe(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
