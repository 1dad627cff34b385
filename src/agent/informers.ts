// Informers: one client-node ListWatch per cached kind, cluster-wide (or, in namespaced mode, one
// per kind and listed namespace, the namespaces themselves read by name), selected by
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
import { type Kube, statusCodeOf } from "./kube.ts";
import { continueFrom, forEachPage, LIST_PAGE_SIZE } from "./paged-list.ts";
import { stripForCache } from "./strip-object.ts";

export const MANAGED_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY}`;

type List = KubernetesListObject<KubernetesObject>;
type ListQuery = { labelSelector: string; limit: number; _continue?: string };

type Lister = (kube: Kube, query: ListQuery) => Promise<List>;
type NamespacedLister = (kube: Kube, query: ListQuery, namespace: string) => Promise<List>;
interface Source {
  /** Cluster-wide collection path and typed list (the informer's initial and 410 relist). */
  path: string;
  list: Lister;
  /** The same collection inside one namespace (namespaced mode). */
  pathIn: (namespace: string) => string;
  listIn: NamespacedLister;
}
type WatchedKind = Exclude<CachedKind, "namespaces">;

/** Where each namespaced kind is watched, cluster-wide or inside one namespace. Namespaces themselves are below. */
const SOURCES: Record<WatchedKind, Source> = {
  pods: {
    path: "/api/v1/pods",
    list: (k, query) => k.core.listPodForAllNamespaces(query),
    pathIn: (ns) => `/api/v1/namespaces/${ns}/pods`,
    listIn: (k, query, namespace) => k.core.listNamespacedPod({ namespace, ...query }),
  },
  services: {
    path: "/api/v1/services",
    list: (k, query) => k.core.listServiceForAllNamespaces(query),
    pathIn: (ns) => `/api/v1/namespaces/${ns}/services`,
    listIn: (k, query, namespace) => k.core.listNamespacedService({ namespace, ...query }),
  },
  persistentvolumeclaims: {
    path: "/api/v1/persistentvolumeclaims",
    list: (k, query) => k.core.listPersistentVolumeClaimForAllNamespaces(query),
    pathIn: (ns) => `/api/v1/namespaces/${ns}/persistentvolumeclaims`,
    listIn: (k, query, namespace) => k.core.listNamespacedPersistentVolumeClaim({ namespace, ...query }),
  },
  deployments: {
    path: "/apis/apps/v1/deployments",
    list: (k, query) => k.apps.listDeploymentForAllNamespaces(query),
    pathIn: (ns) => `/apis/apps/v1/namespaces/${ns}/deployments`,
    listIn: (k, query, namespace) => k.apps.listNamespacedDeployment({ namespace, ...query }),
  },
  configmaps: {
    path: "/api/v1/configmaps",
    list: (k, query) => k.core.listConfigMapForAllNamespaces(query),
    pathIn: (ns) => `/api/v1/namespaces/${ns}/configmaps`,
    listIn: (k, query, namespace) => k.core.listNamespacedConfigMap({ namespace, ...query }),
  },
  secrets: {
    path: "/api/v1/secrets",
    list: (k, query) => k.core.listSecretForAllNamespaces(query),
    pathIn: (ns) => `/api/v1/namespaces/${ns}/secrets`,
    listIn: (k, query, namespace) => k.core.listNamespacedSecret({ namespace, ...query }),
  },
  serviceaccounts: {
    path: "/api/v1/serviceaccounts",
    list: (k, query) => k.core.listServiceAccountForAllNamespaces(query),
    pathIn: (ns) => `/api/v1/namespaces/${ns}/serviceaccounts`,
    listIn: (k, query, namespace) => k.core.listNamespacedServiceAccount({ namespace, ...query }),
  },
  roles: {
    path: "/apis/rbac.authorization.k8s.io/v1/roles",
    list: (k, query) => k.rbac.listRoleForAllNamespaces(query),
    pathIn: (ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
    listIn: (k, query, namespace) => k.rbac.listNamespacedRole({ namespace, ...query }),
  },
  networkpolicies: {
    path: "/apis/networking.k8s.io/v1/networkpolicies",
    list: (k, query) => k.networking.listNetworkPolicyForAllNamespaces(query),
    pathIn: (ns) => `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`,
    listIn: (k, query, namespace) => k.networking.listNamespacedNetworkPolicy({ namespace, ...query }),
  },
  rolebindings: {
    path: "/apis/rbac.authorization.k8s.io/v1/rolebindings",
    list: (k, query) => k.rbac.listRoleBindingForAllNamespaces(query),
    pathIn: (ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`,
    listIn: (k, query, namespace) => k.rbac.listNamespacedRoleBinding({ namespace, ...query }),
  },
};
/** Cluster mode watches the agent's labelled namespaces; namespaced mode polls each listed one with `get` (see pollNamespaces). */
const NAMESPACES_SOURCE = { path: "/api/v1/namespaces", list: ((k, query) => k.core.listNamespace(query)) as Lister };

/** One informer: a kind, cluster-wide (namespace undefined) or inside one namespace. */
interface Watched {
  kind: CachedKind;
  namespace?: string;
  path: string;
  list: (query: ListQuery) => Promise<List>;
}

/** What to watch: every kind cluster-wide, or every namespaced kind in each listed namespace (pure). */
export function watchPlan(kube: Kube, namespaces: readonly string[] | undefined): Watched[] {
  const kinds = Object.keys(SOURCES) as WatchedKind[];
  if (namespaces === undefined) {
    return [
      { kind: "namespaces", path: NAMESPACES_SOURCE.path, list: (query) => NAMESPACES_SOURCE.list(kube, query) },
      ...kinds.map((kind): Watched => ({ kind, path: SOURCES[kind].path, list: (query) => SOURCES[kind].list(kube, query) })),
    ];
  }
  return namespaces.flatMap((namespace) =>
    kinds.map((kind): Watched => ({ kind, namespace, path: SOURCES[kind].pathIn(namespace), list: (query) => SOURCES[kind].listIn(kube, query, namespace) })),
  );
}

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
  /** Namespaced mode: why a listed namespace could not be read (a 403, say); undefined when read (or absent: 404). */
  namespaceProblem(namespace: string): string | undefined;
  start(): void;
  stop(): Promise<void>;
}

export interface InformerOptions {
  kube: Kube;
  /** Namespaced mode: watch only inside these namespaces (cluster mode when undefined). */
  namespaces?: readonly string[];
  /** Namespaced mode: how often each listed namespace is read with `get` (default 10 s). */
  namespacePollMs?: number;
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
  const plan = watchPlan(kube, options.namespaces);
  // Per kind, how many of its informers (or the namespace poller) have not listed yet.
  const unsynced = new Map<CachedKind, number>(CACHED_KINDS.map((kind) => [kind, 0]));
  for (const { kind } of plan) unsynced.set(kind, unsynced.get(kind)! + 1);
  if (options.namespaces !== undefined) unsynced.set("namespaces", 1);
  const markSynced = (kind: CachedKind) => {
    const left = unsynced.get(kind)! - 1;
    unsynced.set(kind, left);
    if (left === 0) onSynced(kind);
  };
  const namespaceProblems = new Map<string, string>();
  const informers: Array<{ informer: ListWatch<KubernetesObject>; watch: BoundedWatch }> = [];
  const loops: Promise<void>[] = [];
  const abort = new AbortController();
  let stopped = false;

  const aborted = new Promise<void>((resolve) => abort.signal.addEventListener("abort", () => resolve(), { once: true }));
  const sleep = (ms: number) => sleepUnlessAborted(ms, abort.signal);
  const timeoutSeconds = () => Math.round(options.watchTimeoutSeconds * (1 + Math.random()));

  /** Starts one informer and restarts it whenever it stops on an error, until stop(). */
  async function keepRunning({ kind, path, list }: Watched): Promise<void> {
    let listedOnce = false;
    const watch = new BoundedWatch(kube.kc, timeoutSeconds);
    // Page by page, each page stripped before the next is asked for. The watch starts from the
    // first page's resourceVersion: on kube-apiserver every page is that one snapshot; a server
    // whose later pages are newer replays what changed since through the watch.
    const listStripped = async () => {
      let whole: List | undefined;
      await forEachPage(
        (next) => list({ labelSelector: MANAGED_SELECTOR, limit: LIST_PAGE_SIZE, ...continueFrom(next) }),
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
        if (!listedOnce) {
          listedOnce = true;
          markSynced(kind);
        }
        await Promise.race([stoppedByError, aborted]);
        if (stopped) return;
      }
      // A long healthy run starts the backoff over; errors in a row double it.
      failures = Date.now() - startedAt > options.backoffCapMs ? 1 : failures + 1;
      const retryInMs = Math.min(options.backoffCapMs, options.backoffBaseMs * 2 ** (failures - 1));
      logger.warn("informer stopped; restarting", { kind, path, error: (lastError as Error)?.message ?? String(lastError), retryInMs });
      await sleep(retryInMs);
    }
  }

  /**
   * Namespaced mode: the agent may not list namespaces, so it reads each listed one by name.
   * Found: cached (whatever its labels: an administrator created it); 404: removed; any other
   * error: kept as the namespace's problem, reported on its deployments. Synced after one round.
   */
  async function pollNamespaces(namespaces: readonly string[]): Promise<void> {
    let first = true;
    while (!stopped) {
      await Promise.all(
        namespaces.map(async (name) => {
          try {
            const found = await kube.core.readNamespace({ name });
            namespaceProblems.delete(name);
            const before = cache.get("namespaces", undefined, name);
            cache.upsert("namespaces", found);
            if (before?.metadata?.resourceVersion !== found.metadata?.resourceVersion) onChange("namespaces", found);
          } catch (error) {
            const code = statusCodeOf(error);
            if (code === 404) namespaceProblems.delete(name);
            else namespaceProblems.set(name, `namespace ${name} could not be read (${code ?? "no answer"}): ${(error as Error).message.slice(0, 200)}`);
            const before = cache.get("namespaces", undefined, name);
            if (code === 404 && before) {
              cache.remove("namespaces", before);
              onChange("namespaces", before);
            }
          }
        }),
      );
      if (first) {
        first = false;
        markSynced("namespaces");
      }
      await sleep(options.namespacePollMs ?? 10_000);
    }
  }

  return {
    cache,
    isSynced: (kinds) => kinds.every((kind) => unsynced.get(kind) === 0),
    namespaceProblem: (namespace) => namespaceProblems.get(namespace),
    start() {
      for (const watched of plan) loops.push(keepRunning(watched));
      if (options.namespaces !== undefined) loops.push(pollNamespaces(options.namespaces));
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
