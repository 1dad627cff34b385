// Writes an event into the log. Callers pass their transaction, so the event commits
// (or rolls back) with the change it describes: the transactional outbox.
import type { Db } from "../../../db/client.ts";
import type { DeploymentRow } from "../../../db/queries/deployments.ts";
import { insertEvent, type EventRow } from "../../../db/queries/events.ts";
import type { Actor, DeploymentSummary, EventType } from "../../domain/events.ts";
import { newId } from "../../domain/ids.ts";
import type { Principal } from "../../domain/principal.ts";

export interface NewEvent {
  /** A pre-allocated evt_… id (the webhook test verb names its delivery's event first); default: a new one. */
  id?: string;
  type: EventType;
  projectId: string | null;
  deploymentId?: string;
  data: Record<string, unknown>;
}

export async function recordEvent(tx: Db, occurredAt: Date, event: NewEvent): Promise<EventRow> {
  return insertEvent(tx, {
    id: event.id ?? newId("event"),
    type: event.type,
    occurredAt,
    projectId: event.projectId,
    deploymentId: event.deploymentId ?? null,
    data: event.data,
  });
}

export function actorOf(principal: Principal): Actor {
  return principal.kind === "user"
    ? { kind: "user", keyId: principal.keyId }
    : { kind: "agent", keyId: principal.credentialId };
}

export function summarize(row: DeploymentRow): DeploymentSummary {
  return {
    id: row.id,
    name: row.name,
    projectId: row.projectId,
    generation: row.generation,
    resourceVersion: row.resourceVersion,
    phase: row.phase,
  };
}
