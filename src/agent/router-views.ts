// Reading the builtin router's endpoint view for external DP coverage (rank-coverage.ts): GET
// /admin/endpoints on every Ready router pod (signals/router.ts readRouters) with the admin token
// from the observed Secret. A pod that does not answer is a failure, so coverage stays unknown.
import type { V1Pod, V1Secret } from "@kubernetes/client-node";
import type { RouterViews } from "./rank-coverage.ts";
import { readyRouterPods } from "./router-endpoint-list.ts";
import { tokenFromSecret } from "./router-endpoints.ts";
import { readRouters } from "./signals/router.ts";

/** The view holds no model reads (the PUT awaited them), so a short bound is enough. */
export const VIEW_TIMEOUT_MS = 3_000;

export async function readRouterViews({
  routerPods,
  secrets,
  port,
  tokenSecret,
  timeoutMs = VIEW_TIMEOUT_MS,
}: {
  routerPods: readonly V1Pod[];
  secrets: readonly V1Secret[];
  port: number;
  tokenSecret: { name: string; key: string };
  timeoutMs?: number;
}): Promise<RouterViews> {
  const ready = readyRouterPods(routerPods);
  if (ready.length === 0) return { views: [], failures: [] };
  const token = tokenFromSecret(secrets, tokenSecret.name, tokenSecret.key);
  if (!token) return { views: [], failures: [`the router's admin token Secret ${tokenSecret.name} (key ${tokenSecret.key}) is not observed`] };
  const { readings, failures } = await readRouters(
    ready.map((pod) => {
      const ip = pod.status!.podIP!;
      return { uid: pod.metadata?.uid ?? "", name: pod.metadata?.name ?? "", url: `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}` };
    }),
    { token, timeoutMs },
  );
  return { views: readings.map((reading) => reading.view), failures: failures.map((failure) => `${failure.router.name}: ${failure.detail}`) };
}
