// The berth client: openapi-fetch over the generated types, with a retrying transport
// (one Idempotency-Key per POST, reused across retries), a pagination iterator that
// follows nextCursor, and resumable watch/event-stream iterators.
import createClient, { type Client, type FetchOptions } from "openapi-fetch";
import { unwrap } from "./errors.ts";
import { followSse, type FollowOptions } from "./follow.ts";
import { retryingFetch, type Fetch, type RetryOptions } from "./retry.ts";
import type { components, operations, paths } from "./schema.ts";

export type Deployment = components["schemas"]["Deployment"];
export type Event = components["schemas"]["Event"];
export type EventType = components["schemas"]["EventType"];
export type Revision = components["schemas"]["Revision"];

/** One notice of GET /v1/deployments?watch=true; its SSE id is `resourceVersion`. */
export type DeploymentWatchNotice =
  | { type: "ADDED" | "MODIFIED"; resourceVersion: number; object: Deployment }
  | { type: "DELETED"; resourceVersion: number; object: { id: string; name: string; projectId: string; resourceVersion: number } };

export interface BerthClientOptions {
  /** The API's base URL, e.g. http://127.0.0.1:8787 (no /v1). */
  baseUrl: string;
  /** A bearer API key (bp_…). */
  token?: string;
  /** Retry policy of every call, or false for none. */
  retry?: RetryOptions | false;
  /** The fetch to send with (default globalThis.fetch). */
  fetch?: Fetch;
  /** Extra headers on every call. */
  headers?: Record<string, string>;
}

/** GET paths whose 200 answer is a page `{ items, nextCursor }`. */
export type ListPath = {
  [P in keyof paths]: paths[P] extends { get: { responses: { 200: { content: { "application/json": { items: unknown[]; nextCursor: string | null } } } } } }
    ? P
    : never;
}[keyof paths];

export type ListItem<P extends ListPath> = paths[P] extends {
  get: { responses: { 200: { content: { "application/json": { items: (infer I)[] } } } } };
}
  ? I
  : never;

export type ListInit<P extends ListPath> = FetchOptions<paths[P]["get"]>;

/** /v1/events pages by `after` (the last seq); every other list by `cursor`. */
const CURSOR_PARAMETER: Partial<Record<ListPath, string>> = { "/v1/events": "after" };

export interface WatchDeploymentsOptions extends FollowOptions {
  /** Only changes after this version; without it the watch starts with every current deployment as ADDED. */
  resourceVersion?: number;
  /** With an installation-wide key, only this project. */
  projectId?: string;
}

export interface StreamEventsOptions extends FollowOptions {
  /** Only events with a larger seq (default 0: from the beginning). */
  after?: number;
  type?: EventType | EventType[];
  deploymentId?: string;
}

export interface BerthClientExtras {
  /** Every item of a list, page after page (`for await (const d of client.paginate("/v1/deployments"))`). */
  paginate<P extends ListPath>(path: P, init?: ListInit<P>): AsyncGenerator<ListItem<P>>;
  /** ADDED/MODIFIED/DELETED notices of GET /v1/deployments?watch=true, resumed across disconnects. */
  watchDeployments(options?: WatchDeploymentsOptions): AsyncGenerator<DeploymentWatchNotice>;
  /** Events of GET /v1/events/stream, resumed across disconnects. */
  streamEvents(options?: StreamEventsOptions): AsyncGenerator<Event>;
  /** Every retained revision of a deployment (id or name), newest first. */
  revisions(idOrName: string, options?: { projectId?: string }): AsyncGenerator<Revision>;
  /**
   * POST …/rollback: a new generation with that revision's spec (the deployment unchanged when
   * it already has it). `ifMatch` makes it conditional; throws BerthApiError on a refusal.
   */
  rollback(idOrName: string, generation: number, options?: { ifMatch?: string; projectId?: string }): Promise<Deployment>;
}

export type BerthClient = Client<paths> & BerthClientExtras;

/** An openapi-fetch client for any path table, with berth's transport and auth (used for routes newer than the generated types). */
export function createApiClient<Paths extends {}>(options: BerthClientOptions): Client<Paths> {
  const base: Fetch = options.fetch ?? ((request, init) => globalThis.fetch(request, init));
  const transport = options.retry === false ? base : retryingFetch(base, options.retry);
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  return createClient<Paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ""), fetch: transport, headers });
}

export function createBerthClient(options: BerthClientOptions): BerthClient {
  const api = createApiClient<paths>(options);

  async function* paginate<P extends ListPath>(path: P, init?: ListInit<P>): AsyncGenerator<ListItem<P>> {
    const cursorParameter = CURSOR_PARAMETER[path] ?? "cursor";
    const params = (init as { params?: { query?: Record<string, unknown> } } | undefined)?.params;
    let cursor: unknown = params?.query?.[cursorParameter];
    for (;;) {
      const query = { ...params?.query, ...(cursor === undefined ? {} : { [cursorParameter]: cursor }) };
      // A generic path cannot be checked against one operation's parameters; ListInit<P> is.
      const get = api.GET as unknown as (path: string, init: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
      const page = (await unwrap(get(path, { ...init, params: { ...params, query } }))) as { items: ListItem<P>[]; nextCursor: string | null };
      yield* page.items;
      if (page.nextCursor === null || page.items.length === 0) return;
      cursor = page.nextCursor;
    }
  }

  async function* watchDeployments(options: WatchDeploymentsOptions = {}): AsyncGenerator<DeploymentWatchNotice> {
    const query: NonNullable<operations["listDeployments"]["parameters"]["query"]> = { watch: "true" };
    if (options.resourceVersion !== undefined) query.resourceVersion = options.resourceVersion;
    if (options.projectId !== undefined) query.projectId = options.projectId;
    const messages = followSse(
      (lastEventId, signal) =>
        api.GET("/v1/deployments", {
          params: { query },
          headers: streamHeaders(lastEventId),
          parseAs: "stream",
          signal,
        }),
      options,
    );
    for await (const message of messages) {
      if (message.event === "ADDED" || message.event === "MODIFIED" || message.event === "DELETED") {
        yield JSON.parse(message.data) as DeploymentWatchNotice;
      }
    }
  }

  async function* streamEvents(options: StreamEventsOptions = {}): AsyncGenerator<Event> {
    const query: NonNullable<operations["streamEvents"]["parameters"]["query"]> = {};
    if (options.after !== undefined) query.after = options.after;
    if (options.type !== undefined) query.type = options.type;
    if (options.deploymentId !== undefined) query.deploymentId = options.deploymentId;
    const messages = followSse(
      (lastEventId, signal) =>
        api.GET("/v1/events/stream", { params: { query }, headers: streamHeaders(lastEventId), parseAs: "stream", signal }),
      options,
    );
    for await (const message of messages) {
      if (message.event.includes(".")) yield JSON.parse(message.data) as Event;
    }
  }

  function revisions(idOrName: string, options: { projectId?: string } = {}): AsyncGenerator<Revision> {
    const query = options.projectId === undefined ? {} : { projectId: options.projectId };
    return paginate("/v1/deployments/{idOrName}/revisions", { params: { path: { idOrName }, query } });
  }

  async function rollback(idOrName: string, generation: number, options: { ifMatch?: string; projectId?: string } = {}): Promise<Deployment> {
    return unwrap(
      api.POST("/v1/deployments/{idOrName}/rollback", {
        params: {
          path: { idOrName },
          query: options.projectId === undefined ? {} : { projectId: options.projectId },
          header: options.ifMatch === undefined ? {} : { "if-match": options.ifMatch },
        },
        body: { generation },
      }),
    );
  }

  return Object.assign(api, { paginate, watchDeployments, streamEvents, revisions, rollback });
}

function streamHeaders(lastEventId: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  if (lastEventId !== undefined && lastEventId !== "") headers["Last-Event-ID"] = lastEventId;
  return headers;
}

/** The ETag of an answer (`"<resourceVersion>"`), for If-Match. */
export function etagOf(response: Response): string | undefined {
  return response.headers.get("ETag") ?? undefined;
}
