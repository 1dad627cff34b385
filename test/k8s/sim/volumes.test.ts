// PersistentVolumeClaims in the simulated cluster: served to kubectl and client-node, bound at once
// in the default class (a generated volume, the asked capacity), left Pending in a class the
// cluster has not; the scheduler's VolumeBinding messages for a missing or unbound claim; one host
// directory shared by every pod mounting a claim, named to the process in BERTH_VOLUME_MOUNTS,
// and removed with the claim. Real processes.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectl, startTestCluster, waitFor, type TestCluster } from "./support.ts";

let t: TestCluster;
let workDir: string;
const NS = "volumes";
const NODE = process.execPath;

beforeAll(async () => {
  t = await startTestCluster();
  workDir = t.cluster.workDir;
  await t.core.createNamespace({ body: { metadata: { name: NS } } });
});
afterAll(async () => {
  await t?.stop();
});

const claim = (name: string, storageClassName?: string): k8s.V1PersistentVolumeClaim => ({
  metadata: { name },
  spec: { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "10Gi" } }, ...(storageClassName !== undefined && { storageClassName }) },
});

const writerPod = (name: string, claimName: string): k8s.V1Pod => ({
  metadata: { name },
  spec: {
    containers: [
      {
        name: "engine",
        image: "vllm/vllm-openai:v0.11.0",
        // /data is an argv word under the mount path: the kubelet points it at the claim's directory.
        command: [NODE, "-e", "const fs = require('fs'); fs.writeFileSync(process.argv[1] + '/' + process.env.HOSTNAME, process.env.BERTH_VOLUME_MOUNTS); setInterval(() => {}, 1000)", "/data"],
        volumeMounts: [{ name: "shared", mountPath: "/data" }],
      },
    ],
    volumes: [{ name: "shared", persistentVolumeClaim: { claimName } }],
  },
});

async function scheduledCondition(name: string) {
  return waitFor(`${name}'s PodScheduled condition`, async () => {
    const pod = await t.core.readNamespacedPod({ namespace: NS, name });
    return pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  });
}

describe("PersistentVolumeClaims", () => {
  it("binds a claim of the default class to a generated volume with the asked capacity; kubectl lists it", async () => {
    const created = await t.core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: claim("cache") });
    expect(created.spec).toMatchObject({ storageClassName: "standard", volumeMode: "Filesystem", volumeName: `pvc-${created.metadata!.uid}` });
    expect(created.status).toEqual({ phase: "Bound", accessModes: ["ReadWriteMany"], capacity: { storage: "10Gi" } });
    expect(existsSync(join(workDir, "volumes", `pvc-${created.metadata!.uid}`))).toBe(true);

    const table = await kubectl(t, "get", "pvc", "-n", NS);
    expect(table).toMatch(/^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+AGE\n/);
    expect(table).toMatch(new RegExp(`cache\\s+Bound\\s+pvc-${created.metadata!.uid}\\s+10Gi\\s+RWX\\s+standard\\s+<unset>`));
    const json = JSON.parse(await kubectl(t, "get", "persistentvolumeclaim", "cache", "-n", NS, "-o", "json"));
    expect(json.status.phase).toBe("Bound");
  });

  it("keeps the binding through a server-side apply that omits it, and refuses to change the class", async () => {
    const applied = await t.objects.patch(
      { apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: "cache", namespace: NS }, spec: claim("cache").spec } as k8s.KubernetesObject,
      undefined,
      undefined,
      "berth-agent",
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    expect((applied as k8s.V1PersistentVolumeClaim).spec?.volumeName).toMatch(/^pvc-/);
    await expect(
      t.core.patchNamespacedPersistentVolumeClaim(
        { namespace: NS, name: "cache", body: { spec: { storageClassName: "other" } } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      ),
    ).rejects.toMatchObject({ code: 422 });
  });

  it("leaves a claim of a class the cluster lacks Pending, and a pod mounting it unschedulable", async () => {
    const created = await t.core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: claim("nvme", "fast-nvme") });
    expect(created.status).toEqual({ phase: "Pending" });
    expect(created.spec?.volumeName).toBeUndefined();
    await t.core.createNamespacedPod({ namespace: NS, body: writerPod("waits-for-nvme", "nvme") });
    const condition = await scheduledCondition("waits-for-nvme");
    expect(condition).toMatchObject({ status: "False", reason: "Unschedulable" });
    expect(condition.message).toBe("0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.");
  });

  it("keeps a pod whose claim does not exist Pending with the scheduler's message, and schedules it once the claim exists", async () => {
    await t.core.createNamespacedPod({ namespace: NS, body: writerPod("early", "late-claim") });
    const condition = await scheduledCondition("early");
    expect(condition.message).toBe('0/2 nodes are available: persistentvolumeclaim "late-claim" not found. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.');
    const pod = await t.core.readNamespacedPod({ namespace: NS, name: "early" });
    expect(pod.status?.phase).toBe("Pending");
    await t.core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: claim("late-claim") });
    await waitFor("early to run", async () => (await t.core.readNamespacedPod({ namespace: NS, name: "early" })).status?.phase === "Running", 60_000);
  });

  it("gives every pod of a claim the same host directory, names it in BERTH_VOLUME_MOUNTS, and deletes it with the claim", async () => {
    const created = await t.core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: claim("shared") });
    const dir = join(workDir, "volumes", created.spec!.volumeName!);
    await t.core.createNamespacedPod({ namespace: NS, body: writerPod("writer-a", "shared") });
    await t.core.createNamespacedPod({ namespace: NS, body: writerPod("writer-b", "shared") });
    await waitFor("both writers' files", async () => existsSync(join(dir, "writer-a")) && existsSync(join(dir, "writer-b")), 60_000);
    expect(JSON.parse(readFileSync(join(dir, "writer-a"), "utf8"))).toEqual({ "/data": dir });
    expect(JSON.parse(readFileSync(join(dir, "writer-b"), "utf8"))).toEqual({ "/data": dir });

    for (const name of ["writer-a", "writer-b"]) await t.core.deleteNamespacedPod({ namespace: NS, name, gracePeriodSeconds: 0 });
    await t.core.deleteNamespacedPersistentVolumeClaim({ namespace: NS, name: "shared" });
    await waitFor("the claim's directory to go", async () => !existsSync(dir));
    await expect(t.core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: "shared" })).rejects.toMatchObject({ code: 404 });
  });
});
