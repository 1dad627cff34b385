// Server-side printing: kubectl asks for `as=Table` and prints the columns the server chose.
// The columns and cell wording follow kube-apiserver's printers for the kinds berth uses (pods'
// STATUS is the waiting/terminated reason, RESTARTS "3 (5m ago)", ages as HumanDuration);
// every other kind gets the generic NAME / CREATED AT table.
import type { KubeObject } from "./objects.ts";
import type { ResourceType } from "./resources.ts";

type Dict = Record<string, any>;

interface Column {
  name: string;
  type: "string" | "integer" | "date";
  format?: string;
  priority?: number;
  cell(object: Dict, now: number): string | number;
}

/** apimachinery's duration.HumanDuration. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24) % 365;
    return days === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${days}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

const age = (at: string | undefined, now: number) => (at ? humanDuration(now - Date.parse(at)) : "<unknown>");
const name: Column = { name: "Name", type: "string", format: "name", cell: (o) => o.metadata.name };
const ageColumn: Column = { name: "Age", type: "string", cell: (o, now) => age(o.metadata.creationTimestamp, now) };

/** kubectl's pod STATUS column. */
export function podStatusText(pod: Dict): { status: string; ready: number; total: number; restarts: number; lastRestart?: number } {
  let reason: string = pod.status?.reason || pod.status?.phase || "Unknown";
  const statuses: Dict[] = pod.status?.containerStatuses ?? [];
  let ready = 0;
  let restarts = 0;
  let lastRestart: number | undefined;
  let running = false;
  for (const status of [...statuses].reverse()) {
    restarts += status.restartCount ?? 0;
    const finished = status.lastState?.terminated?.finishedAt;
    if (finished) lastRestart = Math.max(lastRestart ?? 0, Date.parse(finished));
    if (status.state?.waiting?.reason) reason = status.state.waiting.reason;
    else if (status.state?.terminated?.reason) reason = status.state.terminated.reason;
    else if (status.state?.terminated) reason = status.state.terminated.signal ? `Signal:${status.state.terminated.signal}` : `ExitCode:${status.state.terminated.exitCode}`;
    else if (status.ready && status.state?.running) {
      running = true;
      ready++;
    }
  }
  if (reason === "Completed" && running) reason = "Running";
  if (pod.metadata.deletionTimestamp) reason = "Terminating";
  return { status: reason, ready, total: (pod.spec?.containers ?? []).length, restarts, lastRestart };
}

const COLUMNS: Record<string, Column[]> = {
  pods: [
    name,
    { name: "Ready", type: "string", cell: (o) => `${podStatusText(o).ready}/${podStatusText(o).total}` },
    { name: "Status", type: "string", cell: (o) => podStatusText(o).status },
    {
      name: "Restarts",
      type: "string",
      cell: (o, now) => {
        const { restarts, lastRestart } = podStatusText(o);
        return lastRestart ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts);
      },
    },
    ageColumn,
    { name: "IP", type: "string", priority: 1, cell: (o) => o.status?.podIP || "<none>" },
    { name: "Node", type: "string", priority: 1, cell: (o) => o.spec?.nodeName || "<none>" },
    { name: "Nominated Node", type: "string", priority: 1, cell: () => "<none>" },
    { name: "Readiness Gates", type: "string", priority: 1, cell: () => "<none>" },
  ],
  nodes: [
    name,
    {
      name: "Status",
      type: "string",
      cell: (o) => {
        const ready = (o.status?.conditions ?? []).find((c: Dict) => c.type === "Ready")?.status === "True" ? "Ready" : "NotReady";
        return o.spec?.unschedulable ? `${ready},SchedulingDisabled` : ready;
      },
    },
    { name: "Roles", type: "string", cell: () => "<none>" },
    ageColumn,
    { name: "Version", type: "string", cell: (o) => o.status?.nodeInfo?.kubeletVersion ?? "" },
    { name: "Internal-IP", type: "string", priority: 1, cell: (o) => (o.status?.addresses ?? []).find((a: Dict) => a.type === "InternalIP")?.address ?? "<none>" },
    { name: "External-IP", type: "string", priority: 1, cell: () => "<none>" },
    { name: "OS-Image", type: "string", priority: 1, cell: (o) => o.status?.nodeInfo?.osImage ?? "" },
    { name: "Kernel-Version", type: "string", priority: 1, cell: (o) => o.status?.nodeInfo?.kernelVersion ?? "" },
    { name: "Container-Runtime", type: "string", priority: 1, cell: (o) => o.status?.nodeInfo?.containerRuntimeVersion ?? "" },
  ],
  services: [
    name,
    { name: "Type", type: "string", cell: (o) => o.spec?.type ?? "ClusterIP" },
    { name: "Cluster-IP", type: "string", cell: (o) => o.spec?.clusterIP ?? "<none>" },
    { name: "External-IP", type: "string", cell: () => "<none>" },
    { name: "Port(s)", type: "string", cell: (o) => (o.spec?.ports ?? []).map((p: Dict) => `${p.port}/${p.protocol ?? "TCP"}`).join(",") || "<none>" },
    ageColumn,
    {
      name: "Selector",
      type: "string",
      priority: 1,
      cell: (o) => Object.entries(o.spec?.selector ?? {}).map(([k, v]) => `${k}=${String(v)}`).join(",") || "<none>",
    },
  ],
  deployments: [
    name,
    { name: "Ready", type: "string", cell: (o) => `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 0}` },
    { name: "Up-to-date", type: "integer", cell: (o) => o.status?.updatedReplicas ?? 0 },
    { name: "Available", type: "integer", cell: (o) => o.status?.availableReplicas ?? 0 },
    ageColumn,
    { name: "Containers", type: "string", priority: 1, cell: (o) => (o.spec?.template?.spec?.containers ?? []).map((c: Dict) => c.name).join(",") },
    { name: "Images", type: "string", priority: 1, cell: (o) => (o.spec?.template?.spec?.containers ?? []).map((c: Dict) => c.image).join(",") },
    {
      name: "Selector",
      type: "string",
      priority: 1,
      cell: (o) => Object.entries(o.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${String(v)}`).join(","),
    },
  ],
  namespaces: [name, { name: "Status", type: "string", cell: (o) => o.status?.phase ?? "" }, ageColumn],
  events: [
    { name: "Last Seen", type: "string", cell: (o, now) => age(o.lastTimestamp ?? o.eventTime ?? o.metadata.creationTimestamp, now) },
    { name: "Type", type: "string", cell: (o) => o.type ?? "" },
    { name: "Reason", type: "string", cell: (o) => o.reason ?? "" },
    { name: "Object", type: "string", cell: (o) => `${String(o.involvedObject?.kind ?? "").toLowerCase()}/${o.involvedObject?.name ?? ""}` },
    { name: "Message", type: "string", cell: (o) => o.message ?? "" },
    { name: "Count", type: "integer", priority: 1, cell: (o) => o.count ?? 1 },
    name,
  ],
  endpoints: [
    name,
    {
      name: "Endpoints",
      type: "string",
      cell: (o) =>
        (o.subsets ?? []).flatMap((s: Dict) => (s.addresses ?? []).flatMap((a: Dict) => (s.ports ?? []).map((p: Dict) => `${a.ip}:${p.port}`))).join(",") || "<none>",
    },
    ageColumn,
  ],
  // kubectl 1.32's claim columns (pkg/printers/internalversion printPersistentVolumeClaim).
  persistentvolumeclaims: [
    name,
    { name: "Status", type: "string", cell: (o) => o.status?.phase ?? "" },
    { name: "Volume", type: "string", cell: (o) => o.spec?.volumeName ?? "" },
    { name: "Capacity", type: "string", cell: (o) => o.status?.capacity?.storage ?? "" },
    { name: "Access Modes", type: "string", cell: (o) => (o.status?.accessModes ?? []).map((m: string) => ACCESS_MODES[m] ?? m).join(",") },
    { name: "StorageClass", type: "string", cell: (o) => o.spec?.storageClassName ?? "" },
    { name: "VolumeAttributesClass", type: "string", cell: (o) => o.spec?.volumeAttributesClassName ?? "<unset>" },
    ageColumn,
    { name: "VolumeMode", type: "string", priority: 1, cell: (o) => o.spec?.volumeMode ?? "" },
  ],
  configmaps: [name, { name: "Data", type: "integer", cell: (o) => Object.keys(o.data ?? {}).length + Object.keys(o.binaryData ?? {}).length }, ageColumn],
  // kubectl's lease columns (pkg/printers/internalversion printLease): the holder, empty when released.
  leases: [name, { name: "Holder", type: "string", cell: (o) => o.spec?.holderIdentity ?? "" }, ageColumn],
  secrets: [name, { name: "Type", type: "string", cell: (o) => o.type ?? "Opaque" }, { name: "Data", type: "integer", cell: (o) => Object.keys(o.data ?? {}).length }, ageColumn],
};

const ACCESS_MODES: Record<string, string> = { ReadWriteOnce: "RWO", ReadOnlyMany: "ROX", ReadWriteMany: "RWX", ReadWriteOncePod: "RWOP" };

/** The API groups whose kinds have their own columns above (a kind's plural is unique across them). */
const PRINTED_GROUPS = new Set(["", "apps", "coordination.k8s.io"]);

const GENERIC: Column[] = [name, { name: "Created At", type: "date", cell: (o) => o.metadata.creationTimestamp ?? "" }];

function partialMetadata(object: KubeObject) {
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata };
}

export function toTable(resource: ResourceType, objects: readonly KubeObject[], listMeta: Record<string, unknown>, includeObject = "Metadata", now = Date.now()) {
  const columns = COLUMNS[PRINTED_GROUPS.has(resource.group) ? resource.resource : ""] ?? GENERIC;
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: listMeta,
    columnDefinitions: columns.map((c) => ({ name: c.name, type: c.type, format: c.format ?? "", description: c.name, priority: c.priority ?? 0 })),
    rows: objects.map((object) => ({
      cells: columns.map((c) => c.cell(object as Dict, now)),
      ...(includeObject === "None" ? {} : { object: includeObject === "Object" ? object : partialMetadata(object) }),
    })),
  };
}
