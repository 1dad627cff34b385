// A node's registration and liveness, as the kubelet does them: create the Node (or take over
// the one of that name), renew its Lease in kube-node-lease every 10 s (the node-lifecycle
// controller taints a node whose Lease lapses for 40 s), and re-post its conditions every
// `statusEveryMs`. Errors are logged and retried on the next beat: a lapse is the controller's
// to notice.
import * as k8s from "@kubernetes/client-node";
import { nodeConditions, nodeObject, type VirtualNode } from "./node-object.ts";

const LEASE_SECONDS = 40;
const MERGE_PATCH = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

const isCode = (error: unknown, code: number) => (error as { code?: number }).code === code;
const seconds = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, "Z");

export interface Heartbeat {
  stop(): void;
}

export async function registerNode(kc: k8s.KubeConfig, node: VirtualNode, log: (line: string) => void, options: { leaseEveryMs?: number; statusEveryMs?: number } = {}): Promise<Heartbeat> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const object = nodeObject(node, seconds(new Date())) as k8s.V1Node;
  let uid: string | undefined;
  try {
    uid = (await core.createNode({ body: object })).metadata?.uid;
  } catch (error) {
    if (!isCode(error, 409)) throw error;
    // A node restarting under the same name: post the status it has now.
    await core.patchNodeStatus({ name: node.name, body: { status: object.status } }, MERGE_PATCH);
    uid = (await core.readNode({ name: node.name })).metadata?.uid;
  }

  const renewLease = async () => {
    // V1MicroTime serializes with the six fraction digits kube-apiserver requires of a Lease.
    const spec: k8s.V1LeaseSpec = { holderIdentity: node.name, leaseDurationSeconds: LEASE_SECONDS, renewTime: new k8s.V1MicroTime(Date.now()) };
    try {
      const lease = await coordination.readNamespacedLease({ namespace: "kube-node-lease", name: node.name });
      await coordination.replaceNamespacedLease({ namespace: "kube-node-lease", name: node.name, body: { ...lease, spec: { ...lease.spec, ...spec } } });
    } catch (error) {
      if (!isCode(error, 404)) throw error;
      await coordination.createNamespacedLease({
        namespace: "kube-node-lease",
        body: {
          metadata: { name: node.name, ownerReferences: uid ? [{ apiVersion: "v1", kind: "Node", name: node.name, uid }] : [] },
          spec,
        },
      });
    }
  };
  const postStatus = () => core.patchNodeStatus({ name: node.name, body: { status: { conditions: nodeConditions(seconds(new Date())) } } }, MERGE_PATCH);

  await renewLease();
  const beat = (what: string, fn: () => Promise<unknown>) => () => void fn().catch((error) => log(`${what}: ${String(error)}`));
  const timers = [
    setInterval(beat("lease", renewLease), options.leaseEveryMs ?? 10_000),
    setInterval(beat("node status", postStatus), options.statusEveryMs ?? 20_000),
  ];
  return {
    stop: () => timers.forEach(clearInterval),
  };
}
