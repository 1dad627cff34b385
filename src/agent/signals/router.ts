// The builtin router's view of load, per role: `GET /admin/endpoints` on every Ready router pod
// (src/router/admin.ts view()) gives each endpoint's in-flight count and the requests held while
// a role has no endpoints (scale-to-zero). Router replicas count separately, so values are Σ over
// the router pods that answered; one that did not is listed missing, never counted as 0.
import { mapConcurrently } from "./concurrency.ts";
import type { ExtraRoleSignals } from "./aggregate.ts";
import { ROUTER_SIGNALS, type MissingSignal, type Signal } from "./signals.ts";

export interface RouterPod {
  uid: string;
  name: string;
  /** The admin base URL, e.g. `http://10.0.0.9:8080`. */
  url: string;
}

export interface AdminEndpoint {
  /** The engine pod's name (src/agent/router-endpoint-list.ts). */
  id: string;
  /** The role kind: server, prefill, decode or encode. */
  role: string;
  state: string;
  inFlight: number;
  /** The address the router sends to; absent when the view does not carry it. */
  url?: string;
  /** External DP: the endpoint's first data-parallel rank. */
  rank?: number;
  /** The model ids read from the endpoint's /v1/models; null while that read has not succeeded. */
  models?: string[] | null;
  /** Why the last /v1/models read failed, if it did. */
  modelsError?: string;
}

export interface AdminView {
  endpoints: AdminEndpoint[];
  held: number;
}

export interface RouterReading {
  router: Omit<RouterPod, "url">;
  at: number;
  view: AdminView;
}

export interface RouterFailure {
  router: Omit<RouterPod, "url">;
  detail: string;
}

export interface RouterReadOptions {
  token: string;
  timeoutMs: number;
  fetch?: typeof fetch;
  concurrency?: number;
  now?: () => number;
}

/** The fields of the admin view the agent reads; anything else in it is ignored. */
export function parseAdminView(body: unknown): AdminView {
  const record = (value: unknown, what: string): Record<string, unknown> => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${what} is not an object`);
    return value as Record<string, unknown>;
  };
  const count = (value: unknown, what: string): number => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw new Error(`${what} is not a count`);
    return value;
  };
  const text = (value: unknown, what: string): string => {
    if (typeof value !== "string") throw new Error(`${what} is not a string`);
    return value;
  };
  const list = (value: unknown, what: string): unknown[] => {
    if (!Array.isArray(value)) throw new Error(`${what} is not an array`);
    return value;
  };
  const view = record(body, "the admin view");
  if (!Array.isArray(view.endpoints)) throw new Error("endpoints is not an array");
  return {
    endpoints: view.endpoints.map((entry, index) => {
      const endpoint = record(entry, `endpoints[${index}]`);
      return {
        id: text(endpoint.id, `endpoints[${index}].id`),
        role: text(endpoint.role, `endpoints[${index}].role`),
        state: text(endpoint.state, `endpoints[${index}].state`),
        inFlight: count(endpoint.inFlight, `endpoints[${index}].inFlight`),
        ...(endpoint.url !== undefined && { url: text(endpoint.url, `endpoints[${index}].url`) }),
        ...(endpoint.rank !== undefined && { rank: count(endpoint.rank, `endpoints[${index}].rank`) }),
        ...(endpoint.models !== undefined && {
          models: endpoint.models === null ? null : list(endpoint.models, `endpoints[${index}].models`).map((model, m) => text(model, `endpoints[${index}].models[${m}]`)),
        }),
        ...(endpoint.modelsError !== undefined && { modelsError: text(endpoint.modelsError, `endpoints[${index}].modelsError`) }),
      };
    }),
    held: count(view.held, "held"),
  };
}

export async function readRouters(routers: readonly RouterPod[], options: RouterReadOptions): Promise<{ readings: RouterReading[]; failures: RouterFailure[] }> {
  const fetchFn = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const outcomes = await mapConcurrently(routers, options.concurrency ?? 8, async ({ url, ...router }) => {
    try {
      const response = await fetchFn(`${url.replace(/\/+$/, "")}/admin/endpoints`, {
        headers: { authorization: `Bearer ${options.token}`, accept: "application/json" },
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      if (!response.ok) {
        await response.body?.cancel();
        return { router, detail: `GET /admin/endpoints answered ${response.status}` };
      }
      const view = parseAdminView(await response.json());
      return { router, at: now(), view };
    } catch (error) {
      return { router, detail: error instanceof Error ? error.message : String(error) };
    }
  });
  return {
    readings: outcomes.filter((outcome): outcome is RouterReading => "view" in outcome),
    failures: outcomes.filter((outcome): outcome is RouterFailure => "detail" in outcome),
  };
}

export interface RouterSignalsInput {
  readings: readonly RouterReading[];
  failures: readonly RouterFailure[];
  /** The deployment's roles with their kinds (what the router knows a role by). */
  roles: ReadonlyArray<{ name: string; kind: string }>;
  /** Engine pod name → role name, for endpoints (named after their pods) of roles sharing a kind. */
  podRoles: ReadonlyMap<string, string>;
  now: number;
}

/**
 * In-flight: Σ over router pods and over the role's endpoints, draining ones included (their
 * requests are still load). Held requests wait for a role with no eligible endpoint, so each
 * router's held count goes to the roles it has none for (to every role if it has some for all,
 * a moment between a push and the release).
 */
export function routerSignalsByRole(input: RouterSignalsInput): Map<string, ExtraRoleSignals> {
  const roleOfEndpoint = (endpoint: AdminEndpoint): string | undefined => {
    const byPod = input.podRoles.get(endpoint.id);
    if (byPod !== undefined) return byPod;
    const ofKind = input.roles.filter((role) => role.kind === endpoint.role);
    return ofKind.length === 1 ? ofKind[0]!.name : undefined;
  };
  const inFlight = new Map(input.roles.map((role) => [role.name, 0]));
  const held = new Map(input.roles.map((role) => [role.name, 0]));
  for (const { view } of input.readings) {
    const eligible = new Set<string>();
    for (const endpoint of view.endpoints) {
      const role = roleOfEndpoint(endpoint);
      if (role === undefined || !inFlight.has(role)) continue;
      inFlight.set(role, inFlight.get(role)! + endpoint.inFlight);
      if (endpoint.state === "eligible") eligible.add(role);
    }
    const waitingFor = input.roles.filter((role) => !eligible.has(role.name));
    for (const role of waitingFor.length > 0 ? waitingFor : input.roles) held.set(role.name, held.get(role.name)! + view.held);
  }
  const observedAt = new Date(input.readings.length === 0 ? input.now : Math.max(...input.readings.map((reading) => reading.at))).toISOString();
  const podCount = input.readings.length;
  const result = new Map<string, ExtraRoleSignals>();
  for (const role of input.roles) {
    const signal = (spec: (typeof ROUTER_SIGNALS)[keyof typeof ROUTER_SIGNALS], value: number): Signal => ({
      ...spec,
      ...(podCount > 0 ? { value } : {}),
      podCount,
      observedAt,
    });
    const missing: MissingSignal[] = input.failures.flatMap((failure) => [
      { name: ROUTER_SIGNALS.inFlight.name, pod: failure.router.name, reason: "unreachable" as const },
      { name: ROUTER_SIGNALS.held.name, pod: failure.router.name, reason: "unreachable" as const },
    ]);
    result.set(role.name, {
      signals: [signal(ROUTER_SIGNALS.inFlight, inFlight.get(role.name)!), signal(ROUTER_SIGNALS.held, held.get(role.name)!)],
      missing,
    });
  }
  return result;
}

/** Requests the router replicas hold (scale-to-zero); undefined when no router answered. */
export function totalHeld(readings: readonly RouterReading[]): number | undefined {
  return readings.length === 0 ? undefined : readings.reduce((sum, reading) => sum + reading.view.held, 0);
}
