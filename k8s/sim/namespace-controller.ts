// Namespace termination: a deleted namespace is Terminating until every object in it is gone
// (pods through their graceful termination), then it is removed.
import { ApiError } from "./objects.ts";
import type { Registry } from "./registry.ts";
import { resourceOf, RESOURCES } from "./resources.ts";
import type { Store } from "./store.ts";
import { WorkQueue } from "./work-queue.ts";

const NAMESPACES = resourceOf("namespaces");

export class NamespaceController {
  readonly #queue: WorkQueue;
  #unsubscribe?: () => void;

  constructor(
    private readonly store: Store,
    private readonly registry: Registry,
  ) {
    this.#queue = new WorkQueue((name) => this.#reconcile(name), "namespace-controller");
  }

  start(): void {
    this.#unsubscribe = this.store.subscribe((change) => {
      const namespace = change.resource === NAMESPACES ? change.object.metadata.name : change.object.metadata.namespace;
      if (!namespace) return;
      if (this.store.get(NAMESPACES, undefined, namespace)?.metadata.deletionTimestamp) this.#queue.add(namespace);
    });
  }

  async #reconcile(name: string): Promise<void> {
    const namespace = this.store.get(NAMESPACES, undefined, name);
    if (!namespace?.metadata.deletionTimestamp) return;
    const contents = this.store.inNamespace(name, RESOURCES);
    if (contents.length === 0) {
      this.registry.removeNow(NAMESPACES, undefined, name);
      return;
    }
    for (const { resource, object } of contents) {
      if (object.metadata.deletionTimestamp) continue;
      try {
        await this.registry.delete(resource, name, object.metadata.name!);
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 404)) throw error;
      }
    }
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#queue.close();
  }
}
