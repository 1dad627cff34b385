// The agent's side of the API protocol (docs/design.md §4): register, heartbeat, desired-state
// long-poll, status writes and deletion confirmation. Transient failures (network, 5xx, 429)
// are retried with capped backoff; callers treat a final failure as "no news" and keep every
// workload as it is — losing the API never deletes or scales anything down.
import { sleepUnlessAborted, withChildSignal } from "./abortable.ts";
import type { DesiredState, Heartbeat } from "../domain/cluster.ts";
import type { DeploymentStatus, Role } from "../domain/deployment-spec.ts";
import type { Deployment } from "../domain/deployment.ts";
import type { DeploymentMetricsInput } from "../domain/metrics.ts";
import type { AgentOperationCreate, AgentOperationPatch, Operation, OperationKind, OperationPhase } from "../domain/operations.ts";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    message: string,
  ) {
    super(message);
  }
}

export interface AgentApi {
  heartbeat(body: Heartbeat, signal?: AbortSignal): Promise<void>;
  desired(since: number, waitSeconds: number, signal?: AbortSignal): Promise<DesiredState>;
  /** Resolves with the deployment as stored after the write (its new resourceVersion), when the API sent it. */
  putStatus(deploymentId: string, status: DeploymentStatus, signal?: AbortSignal): Promise<Deployment | void>;
  /** The autoscaler's latest per-role signals (`PUT /v1/agent/deployments/{id}/metrics`, replaces the previous). */
  putMetrics(deploymentId: string, metrics: DeploymentMetricsInput, signal?: AbortSignal): Promise<void>;
  /**
   * The autoscaler's write: `spec.roles` (arrays replace in a merge patch, so every role, changed
   * only in `replicas`) with If-Match on `resourceVersion`; a concurrent change is an ApiError 412.
   */
  patchReplicas(deploymentId: string, roles: Role[], resourceVersion: number, signal?: AbortSignal): Promise<Deployment>;
  /** `POST /v1/agent/events` (202): e.g. a shadow `deployment.scaled` recommendation. */
  postEvent(event: { type: string; deploymentId: string; data: Record<string, unknown> }, signal?: AbortSignal): Promise<void>;
  /** Resolves when the record is removed (204) or already gone (404). */
  confirmDeletion(deploymentId: string, signal?: AbortSignal): Promise<void>;
  /**
   * Records an operation (intent before action). The Idempotency-Key replays the first answer; a
   * second active operation on the same target is an ApiError 409 whose body names `existingOperationId`.
   */
  createOperation(body: AgentOperationCreate, idempotencyKey: string, signal?: AbortSignal): Promise<Operation>;
  /** Every page of the agent's operations matching the filter, oldest first. */
  listOperations(filter: { deploymentId?: string; kind?: OperationKind; phase?: OperationPhase[] }, signal?: AbortSignal): Promise<Operation[]>;
  patchOperation(id: string, patch: AgentOperationPatch, signal?: AbortSignal): Promise<Operation>;
}

export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  capMs: number;
}

const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseMs: 200, capMs: 5_000 };

const retryable = (status: number) => status === 429 || status >= 500;


async function request(
  baseUrl: string,
  token: string | null,
  method: string,
  path: string,
  options: { body?: unknown; signal?: AbortSignal; retry: RetryPolicy; okStatuses?: number[]; headers?: Record<string, string> },
): Promise<{ status: number; body: unknown }> {
  let lastError: unknown;
  for (let attempt = 0; attempt < options.retry.attempts; attempt++) {
    if (attempt > 0) await sleepUnlessAborted(Math.min(options.retry.capMs, options.retry.baseMs * 2 ** (attempt - 1)), options.signal);
    if (options.signal?.aborted) break;
    try {
      const { res, text } = await withChildSignal(options.signal, async (signal) => {
        const response = await fetch(new URL(path, baseUrl), {
          method,
          headers: {
            ...(token ? { Authorization: `Bearer ${token}` } : {}),
            ...(options.body === undefined ? {} : { "Content-Type": "application/json" }),
            ...options.headers,
          },
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          signal,
        });
        return { res: response, text: await response.text() };
      });
      const body: unknown = text === "" ? undefined : JSON.parse(text);
      if (res.ok || options.okStatuses?.includes(res.status)) return { status: res.status, body };
      lastError = new ApiError(res.status, body, `${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
      if (!retryable(res.status)) break;
    } catch (error) {
      lastError = error;
      if (options.signal?.aborted) break;
    }
  }
  throw lastError ?? new Error(`${method} ${path}: aborted`);
}

/** Exchanges a single-use join token for the agent credential (`ba_…`). */
export async function registerAgent(baseUrl: string, joinToken: string): Promise<{ clusterId: string; token: string }> {
  const { body } = await request(baseUrl, null, "POST", "/v1/agent/register", { body: { joinToken }, retry: DEFAULT_RETRY });
  return body as { clusterId: string; token: string };
}

/**
 * Issues a new agent credential (`POST /v1/agent/credentials`); `token` keeps working until
 * `previousExpiresAt` (the overlap window). One Idempotency-Key for every retry, so a
 * retried request cannot leave a second new credential behind.
 */
export async function rotateAgentCredential(
  baseUrl: string,
  token: string,
): Promise<{ clusterId: string; token: string; previousExpiresAt: string }> {
  const headers = { "Idempotency-Key": `rotate-${crypto.randomUUID()}` };
  const { body } = await request(baseUrl, token, "POST", "/v1/agent/credentials", { retry: DEFAULT_RETRY, headers });
  return body as { clusterId: string; token: string; previousExpiresAt: string };
}

export function createApiClient({ baseUrl, token, retry = DEFAULT_RETRY }: { baseUrl: string; token: string; retry?: RetryPolicy }): AgentApi {
  return {
    async heartbeat(body, signal) {
      await request(baseUrl, token, "POST", "/v1/agent/heartbeat", { body, signal, retry });
    },
    async desired(since, waitSeconds, signal) {
      const path = `/v1/agent/desired?since=${since}&waitSeconds=${waitSeconds}`;
      return (await request(baseUrl, token, "GET", path, { signal, retry })).body as DesiredState;
    },
    async putStatus(deploymentId, status, signal) {
      return (await request(baseUrl, token, "PUT", `/v1/deployments/${encodeURIComponent(deploymentId)}/status`, { body: status, signal, retry }))
        .body as Deployment;
    },
    async putMetrics(deploymentId, metrics, signal) {
      await request(baseUrl, token, "PUT", `/v1/agent/deployments/${encodeURIComponent(deploymentId)}/metrics`, { body: metrics, signal, retry });
    },
    async patchReplicas(deploymentId, roles, resourceVersion, signal) {
      const headers = { "If-Match": `"${resourceVersion}"` };
      const body = { spec: { roles } };
      return (await request(baseUrl, token, "PATCH", `/v1/deployments/${encodeURIComponent(deploymentId)}`, { body, signal, retry, headers })).body as Deployment;
    },
    async postEvent(event, signal) {
      await request(baseUrl, token, "POST", "/v1/agent/events", { body: event, signal, retry });
    },
    async confirmDeletion(deploymentId, signal) {
      await request(baseUrl, token, "DELETE", `/v1/agent/deployments/${encodeURIComponent(deploymentId)}`, {
        signal,
        retry,
        okStatuses: [404],
      });
    },
    async createOperation(body, idempotencyKey, signal) {
      const headers = { "Idempotency-Key": idempotencyKey };
      return (await request(baseUrl, token, "POST", "/v1/agent/operations", { body, signal, retry, headers })).body as Operation;
    },
    async listOperations(filter, signal) {
      const items: Operation[] = [];
      let cursor: string | undefined;
      // Bounded: 200 pages of 200 is far beyond what one cluster keeps active.
      for (let page = 0; page < 200; page++) {
        const query = new URLSearchParams({ limit: "200" });
        if (filter.deploymentId) query.set("deploymentId", filter.deploymentId);
        if (filter.kind) query.set("kind", filter.kind);
        for (const phase of filter.phase ?? []) query.append("phase", phase);
        if (cursor) query.set("cursor", cursor);
        const body = (await request(baseUrl, token, "GET", `/v1/agent/operations?${query}`, { signal, retry })).body as {
          items: Operation[];
          nextCursor: string | null;
        };
        items.push(...body.items);
        if (!body.nextCursor) break;
        cursor = body.nextCursor;
      }
      return items;
    },
    async patchOperation(id, patch, signal) {
      return (await request(baseUrl, token, "PATCH", `/v1/agent/operations/${encodeURIComponent(id)}`, { body: patch, signal, retry })).body as Operation;
    },
  };
}
