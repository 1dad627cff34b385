// coordination.k8s.io/v1 Leases on the simulated API server, as leader election uses them through
// client-node and kubectl: MicroTime decoding (six fraction digits or 400), kube-apiserver's spec
// validation (422), 409 on a stale resourceVersion, a watch that sees each renewal, and
// `kubectl get leases` with NAME HOLDER AGE.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectl, startTestCluster, waitFor, type TestCluster } from "./support.ts";

let t: TestCluster;
let leases: k8s.CoordinationV1Api;
beforeAll(async () => {
  t = await startTestCluster({ nodes: [] });
  leases = t.kc.makeApiClient(k8s.CoordinationV1Api);
  await t.core.createNamespace({ body: { metadata: { name: "leases" } } });
});
afterAll(async () => {
  await t?.stop();
});

const NS = "leases";
const lease = (name: string, spec: Record<string, unknown>): k8s.V1Lease => ({ metadata: { name }, spec: spec as k8s.V1LeaseSpec });

async function apiError(promise: Promise<unknown>): Promise<{ code: number; status: { reason: string; message: string; details?: { causes?: object[] } } }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof k8s.ApiException) return { code: error.code, status: JSON.parse(error.body as string) };
    throw error;
  }
  throw new Error("expected an ApiException");
}

describe("Leases", () => {
  it("stores MicroTimes with six fraction digits in UTC and refuses a millisecond timestamp with 400", async () => {
    const created = await leases.createNamespacedLease({
      namespace: NS,
      body: lease("micro", { holderIdentity: "a", leaseDurationSeconds: 15, acquireTime: new k8s.V1MicroTime("2026-12-02T06:00:00.123Z"), renewTime: new k8s.V1MicroTime("2026-12-02T06:00:00.123Z") }),
    });
    expect(created.spec?.holderIdentity).toBe("a");
    const raw = (await fetch(`${t.cluster.url}/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/micro`).then((r) => r.json())) as { spec: Record<string, unknown> };
    expect(raw.spec).toEqual({ holderIdentity: "a", leaseDurationSeconds: 15, acquireTime: "2026-12-02T06:00:00.123000Z", renewTime: "2026-12-02T06:00:00.123000Z" });

    const offset = await fetch(`${t.cluster.url}/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(lease("offset", { renewTime: "2026-12-02T08:00:00.000001+02:00" })),
    }).then((r) => r.json() as Promise<{ spec: Record<string, unknown> }>);
    expect(offset.spec.renewTime).toBe("2026-12-02T06:00:00.000001Z");

    // A plain Date serializes with three digits: kube-apiserver's decoder (RFC3339Micro) refuses it.
    const millis = await apiError(leases.createNamespacedLease({ namespace: NS, body: lease("millis", { renewTime: new Date("2026-12-02T06:00:00.123Z") }) }));
    expect(millis.code).toBe(400);
    expect(millis.status.reason).toBe("BadRequest");
    expect(millis.status.message).toContain('parsing time "2026-12-02T06:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00"');
    await expect(leases.readNamespacedLease({ namespace: NS, name: "millis" })).rejects.toMatchObject({ code: 404 });
  });

  it.each([
    [{ leaseDurationSeconds: 0 }, 'Lease.coordination.k8s.io "bad" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0'],
    [{ leaseDurationSeconds: -5 }, 'Lease.coordination.k8s.io "bad" is invalid: spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0'],
    [{ leaseTransitions: -1 }, 'Lease.coordination.k8s.io "bad" is invalid: spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0'],
  ])("refuses %j with 422 as kube-apiserver's ValidateLeaseSpec", async (spec, message) => {
    const refused = await apiError(leases.createNamespacedLease({ namespace: NS, body: lease("bad", spec) }));
    expect(refused.code).toBe(422);
    expect(refused.status.message).toBe(message);
  });

  it("validates updates too, answers 409 to a stale resourceVersion and a watch sees every write", async () => {
    const first = await leases.createNamespacedLease({ namespace: NS, body: lease("election", { holderIdentity: "a", leaseDurationSeconds: 3, leaseTransitions: 0 }) });
    const seen: string[] = [];
    const watch = await new k8s.Watch(t.kc).watch(
      `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`,
      { resourceVersion: first.metadata!.resourceVersion! },
      (type, object: k8s.V1Lease) => seen.push(`${type} ${object.metadata?.name} ${object.spec?.holderIdentity ?? ""} ${object.spec?.leaseTransitions}`),
      () => {},
    );
    try {
      const renewed = await leases.replaceNamespacedLease({ namespace: NS, name: "election", body: { ...first, spec: { ...first.spec, renewTime: new k8s.V1MicroTime() } } });
      expect(Number(renewed.metadata!.resourceVersion)).toBeGreaterThan(Number(first.metadata!.resourceVersion));
      const stale = await apiError(leases.replaceNamespacedLease({ namespace: NS, name: "election", body: { ...first, spec: { ...first.spec, holderIdentity: "b", leaseTransitions: 1 } } }));
      expect(stale.code).toBe(409);
      expect(stale.status.message).toBe('Operation cannot be fulfilled on leases.coordination.k8s.io "election": the object has been modified; please apply your changes to the latest version and try again');
      const invalid = await apiError(leases.replaceNamespacedLease({ namespace: NS, name: "election", body: { ...renewed, spec: { ...renewed.spec, leaseDurationSeconds: 0 } } }));
      expect(invalid.code).toBe(422);
      await leases.replaceNamespacedLease({ namespace: NS, name: "election", body: { ...renewed, spec: { ...renewed.spec, holderIdentity: "b", leaseTransitions: 1 } } });
      await waitFor("the watch to see both writes", async () => seen.length >= 2);
      expect(seen).toEqual(["MODIFIED election a 0", "MODIFIED election b 1"]);
    } finally {
      watch.abort();
    }
  });

  it("kubectl get leases prints NAME HOLDER AGE, the holder empty once released", async () => {
    await leases.createNamespacedLease({ namespace: NS, body: lease("printed", { holderIdentity: "agent-7", leaseDurationSeconds: 15 }) });
    await leases.createNamespacedLease({ namespace: NS, body: lease("released", { leaseDurationSeconds: 1 }) });
    const table = await kubectl(t, "get", "leases", "-n", NS, "printed", "released");
    const lines = table.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+HOLDER\s+AGE$/);
    expect(lines[1]).toMatch(/^printed\s+agent-7\s+\d+s$/);
    expect(lines[2]).toMatch(/^released\s+\d+s$/);
  });
});
