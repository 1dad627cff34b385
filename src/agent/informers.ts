// Informers: one client-node ListWatch per cached kind, cluster-wide, selected by
// app.kubernetes.io/managed-by=berth-agent, feeding the ClusterCache and telling the agent what
// changed. ListWatch relists by itself after a 410 (an ERROR event with code 410, or a 410
// answer), resumes from its resourceVersion after a watch ends, and stops for good on any other
// error: this module restarts it with capped exponential backoff. Watches carry timeoutSeconds
// (5–10 min by default, as client-go's reflector) and a client-side guard past it, so a silently
// dead connection cannot freeze the cache. A kind counts as synced once its first list landed;
// it stays synced while restarting (the cache keeps what it last saw, as client-go's HasSynced).
import { sleepUnlessAborted } from "./abortable.ts";
import { type KubernetesListObject, type KubernetesObject, ListWatch, Watch } from "@kubernetes/client-node";
import { LABELS, MANAGED_BY } from "../../k8s/render/index.ts";
import { CACHED_KINDS, type CachedKind, ClusterCache } from "./cluster-cache.ts";
import type { Kube } from "./kube.ts";
import { continueFrom, forEachPage, LIST_PAGE_SIZE } from "./paged-list.ts";
import { stripForCache } from "./strip-object.ts";

export const MANAGED_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY}`;

type List = KubernetesListObject<KubernetesObject>;
type ListQuery = { labelSelector: string; limit: number; _continue?: string };

/** Where each kind is watched cluster-wide, and its typed list (the informer's initial and 410 relist). */
const SOURCES: Record<CachedKind, { path: string; list: (kube: Kube, query: ListQuery) => Promise<List> }> = {
  namespaces: { path: "/api/v1/namespaces", list: (k, query) => k.core.listNamespace(query) },
  pods: { path: "/api/v1/pods", list: (k, query) => k.core.listPodForAllNamespaces(query) },
  services: { path: "/api/v1/services", list: (k, query) => k.core.listServiceForAllNamespaces(query) },
  persistentvolumeclaims: {
    path: "/api/v1/persistentvolumeclaims",
    list: (k, query) => k.core.listPersistentVolumeClaimForAllNamespaces(query),
  },
  deployments: { path: "/apis/apps/v1/deployments", list: (k, query) => k.apps.listDeploymentForAllNamespaces(query) },
  configmaps: { path: "/api/v1/configmaps", list: (k, query) => k.core.listConfigMapForAllNamespaces(query) },
  secrets: { path: "/api/v1/secrets", list: (k, query) => k.core.listSecretForAllNamespaces(query) },
  serviceaccounts: { path: "/api/v1/serviceaccounts", list: (k, query) => k.core.listServiceAccountForAllNamespaces(query) },
  roles: { path: "/apis/rbac.authorization.k8s.io/v1/roles", list: (k, query) => k.rbac.listRoleForAllNamespaces(query) },
  rolebindings: {
    path: "/apis/rbac.authorization.k8s.io/v1/rolebindings",
    list: (k, query) => k.rbac.listRoleBindingForAllNamespaces(query),
  },
};

/** A watch that ends normally sooner than this is reopened only this long after it opened. */
const MIN_WATCH_MS = 1_000;

/**
 * client-node's Watch, bounded three ways. A server-side timeout (ListWatch sends none, and
 * kube-apiserver only ends such watches after 30–60 min) and a client-side abort 30 s past it, for
 * a connection that died without closing: either end is reported as a normal close, so ListWatch
 * resumes from its resourceVersion (or relists after a 410). An in-stream ERROR other than 410 is
 * reported as the watch's error, and a normal end within MIN_WATCH_MS is reported only once that
 * much time passed: ListWatch would otherwise reopen at once from the same resourceVersion, in a
 * loop with no backoff; an error stops it instead, and the restart below backs off.
 */
class BoundedWatch extends Watch {
  /** Set by stop(): ListWatch may be mid-list then and would open a watch afterwards; none is opened. */
  closed = false;

  constructor(
    kc: Kube["kc"],
    private readonly timeoutSeconds: () => number,
  ) {
    super(kc);
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    done: (err: any) => void,
  ): Promise<AbortController> {
    if (this.closed) return new AbortController();
    const seconds = this.timeoutSeconds();
    const openedAt = Date.now();
    let expired = false;
    let finished = false;
    let gone = false;
    let streamError: Error | undefined;
    let guard: ReturnType<typeof setTimeout> | undefined;
    const onEvent = (phase: string, object: any, raw?: any) => {
      if (phase === "ERROR") {
        if (object?.code === 410) gone = true;
        else streamError ??= Object.assign(new Error(`watch ${path}: ${object?.message ?? "ERROR event"}`), { code: object?.code });
      }
      callback(phase, phase === "ERROR" ? object : stripForCache(object), raw);
    };
    const controller = await super.watch(path, { ...queryParams, timeoutSeconds: seconds }, onEvent, (err) => {
      finished = true;
      clearTimeout(guard);
      const outcome = expired ? null : (err ?? streamError ?? null);
      const early = MIN_WATCH_MS - (Date.now() - openedAt);
      if (outcome === null && !gone && early > 0) setTimeout(() => done(null), early).unref?.();
      else done(outcome);
    });
    if (this.closed) controller.abort();
    else if (!finished) {
      guard = setTimeout(() => {
        expired = true;
        controller.abort();
      }, (seconds + 30) * 1000);
      guard.unref?.();
    }
    return controller;
  }
}

export interface Informers {
  readonly cache: ClusterCache;
  /** Every one of these kinds has listed at least once. */
  isSynced(kinds: readonly CachedKind[]): boolean;
  start(): void;
  stop(): Promise<void>;
}

export interface InformerOptions {
  kube: Kube;
  /** Base of the watches' timeoutSeconds; each watch takes a random value in [base, 2 × base). */
  watchTimeoutSeconds: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  logger: { warn(msg: string, data?: object): void };
  /** An object was added, updated or deleted (the cache already holds the change). */
  onChange(kind: CachedKind, object: KubernetesObject): void;
  /** A kind listed for the first time. */
  onSynced(kind: CachedKind): void;
}

export function createInformers(options: InformerOptions): Informers {
  const { kube, logger, onChange, onSynced } = options;
  const cache = new ClusterCache();
  const synced = new Set<CachedKind>();
  const informers: Array<{ informer: ListWatch<KubernetesObject>; watch: BoundedWatch }> = [];
  const loops: Promise<void>[] = [];
  const abort = new AbortController();
  let stopped = false;

  const aborted = new Promise<void>((resolve) => abort.signal.addEventListener("abort", () => resolve(), { once: true }));
  const sleep = (ms: number) => sleepUnlessAborted(ms, abort.signal);
  const timeoutSeconds = () => Math.round(options.watchTimeoutSeconds * (1 + Math.random()));

  /** Starts one kind's informer and restarts it whenever it stops on an error, until stop(). */
  async function keepRunning(kind: CachedKind): Promise<void> {
    const { path, list } = SOURCES[kind];
    const watch = new BoundedWatch(kube.kc, timeoutSeconds);
    // Page by page, each page stripped before the next is asked for. The watch starts from the
    // first page's resourceVersion: on kube-apiserver every page is that one snapshot; a server
    // whose later pages are newer replays what changed since through the watch.
    const listStripped = async () => {
      let whole: List | undefined;
      await forEachPage(
        (next) => list(kube, { labelSelector: MANAGED_SELECTOR, limit: LIST_PAGE_SIZE, ...continueFrom(next) }),
        (page) => {
          page.items.forEach(stripForCache);
          if (whole) whole.items.push(...page.items);
          else whole = page;
        },
      );
      if (whole?.metadata) delete whole.metadata._continue;
      return whole!;
    };
    const informer = new ListWatch<KubernetesObject>(path, watch, listStripped, false, MANAGED_SELECTOR);
    informers.push({ informer, watch });
    const changed = (object: KubernetesObject) => {
      cache.upsert(kind, object);
      onChange(kind, object);
    };
    informer.on("add", changed);
    informer.on("update", changed);
    informer.on("delete", (object) => {
      cache.remove(kind, object);
      onChange(kind, object);
    });
    let errors = 0;
    let lastError: unknown;
    let wake: (() => void) | undefined;
    informer.on("error", (error) => {
      errors++;
      lastError = error;
      wake?.();
    });
    let failures = 0;
    while (!stopped) {
      const seen = errors;
      const stoppedByError = new Promise<void>((resolve) => (wake = resolve));
      const startedAt = Date.now();
      try {
        // Resolves once the list landed and the watch is connected, or after an error (reported above).
        await informer.start();
      } catch (error) {
        errors++;
        lastError = error;
      }
      if (stopped) return;
      if (errors === seen) {
        if (!synced.has(kind)) {
          synced.add(kind);
          onSynced(kind);
        }
        await Promise.race([stoppedByError, aborted]);
        if (stopped) return;
      }
      // A long healthy run starts the backoff over; errors in a row double it.
      failures = Date.now() - startedAt > options.backoffCapMs ? 1 : failures + 1;
      const retryInMs = Math.min(options.backoffCapMs, options.backoffBaseMs * 2 ** (failures - 1));
      logger.warn("informer stopped; restarting", { kind, error: (lastError as Error)?.message ?? String(lastError), retryInMs });
      await sleep(retryInMs);
    }
  }

  return {
    cache,
    isSynced: (kinds) => kinds.every((kind) => synced.has(kind)),
    start() {
      for (const kind of CACHED_KINDS) loops.push(keepRunning(kind));
    },
    async stop() {
      stopped = true;
      abort.abort();
      for (const { watch } of informers) watch.closed = true;
      await Promise.allSettled(informers.map(({ informer }) => informer.stop()));
      await Promise.allSettled(loops);
    },
  };
}
