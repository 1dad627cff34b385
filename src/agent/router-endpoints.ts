// Pushing the endpoint list to the builtin router's pods (docs/design.md §6): `PUT /admin/endpoints`
// with the admin token, to every Ready router pod that has not acknowledged this exact list
// (acknowledgements are remembered per pod and container restart, by body hash; a new router
// pod always gets a push). Any failure is thrown: the caller treats it as a reconcile error
// and deletes nothing that was meant to drain first.
import type { V1Pod, V1Secret } from "@kubernetes/client-node";
import { type EndpointsBody, endpointsHash, readyRouterPods, routerAckKey } from "./router-endpoint-list.ts";

/** The router reads each new endpoint's /v1/models (two tries of 3 s) before it answers. */
export const PUSH_TIMEOUT_MS = 15_000;

/** The admin token stored in the router's Secret, or undefined while it is not observed. */
export function tokenFromSecret(secrets: readonly V1Secret[], name: string, key: string): string | undefined {
  const value = secrets.find((s) => s.metadata?.name === name)?.data?.[key];
  return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8").trim();
}

export interface PushInput {
  routerPods: readonly V1Pod[];
  port: number;
  token: string;
  body: EndpointsBody;
  /** Router pod ack key → hash of the body it acknowledged; updated in place. */
  acks: Map<string, string>;
  timeoutMs?: number;
}

/** Pushes where needed; resolves with how many pods were sent the list. */
export async function pushEndpoints({ routerPods, port, token, body, acks, timeoutMs = PUSH_TIMEOUT_MS }: PushInput): Promise<number> {
  const present = new Set(routerPods.map(routerAckKey));
  for (const key of acks.keys()) if (!present.has(key)) acks.delete(key);
  const hash = endpointsHash(body);
  const targets = readyRouterPods(routerPods).filter((pod) => acks.get(routerAckKey(pod)) !== hash);
  const text = JSON.stringify(body);
  const results = await Promise.allSettled(
    targets.map(async (pod) => {
      const ip = pod.status!.podIP!;
      const url = `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}/admin/endpoints`;
      const res = await fetch(url, {
        method: "PUT",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: text,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const answer = await res.text();
      if (!res.ok) throw new Error(`PUT ${url}: ${res.status} ${answer.slice(0, 300)}`);
      acks.set(routerAckKey(pod), hash);
    }),
  );
  const failures = results.flatMap((r, i) =>
    r.status === "rejected" ? [`${targets[i]!.metadata?.name}: ${(r.reason as Error).message ?? String(r.reason)}`] : [],
  );
  if (failures.length > 0) throw new Error(`router endpoint push failed: ${failures.join("; ")}`);
  return targets.length;
}
