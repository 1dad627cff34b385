// Table rendering and the short summaries shown in tables (ages, role replica counts).
import type { Deployment } from "../../../clients/typescript/src/index.ts";

export function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("   ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n") + "\n";
}

/** 45s, 12m, 3h, 5d. */
export function age(timestamp: string | null | undefined, now = Date.now()): string {
  if (!timestamp) return "-";
  const seconds = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** Per role "name ready/replicas" ("?" while the agent has not reported it). */
export function roleReplicas(deployment: Deployment): string {
  const status = new Map((deployment.status.roles ?? []).map((role) => [role.name, role]));
  return deployment.spec.roles.map((role) => `${role.name} ${status.get(role.name)?.ready ?? "?"}/${role.replicas}`).join(", ");
}

export const DEPLOYMENT_COLUMNS = ["NAME", "ID", "PROJECT", "PHASE", "READY", "GEN", "AGE"];

export function deploymentRow(deployment: Deployment): string[] {
  return [
    deployment.name,
    deployment.id,
    deployment.projectId,
    deployment.status.phase,
    roleReplicas(deployment),
    String(deployment.generation),
    age(deployment.createdAt),
  ];
}

export function show(value: unknown): string {
  if (value === undefined) return "(absent)";
  const text = JSON.stringify(value);
  return text.length > 80 ? text.slice(0, 77) + "..." : text;
}
