// The one drizzle schema for PGlite, PostgreSQL and Neon. JSON documents (spec,
// status) live in json (keeps the key order clients sent), labels in jsonb (for @>);
// all are validated by zod in src/domain before they
// get here, and the database only indexes what lists filter and sort on.
import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  doublePrecision,
  index,
  integer,
  json,
  jsonb,
  pgSequence,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

/** One increasing sequence for the whole installation: every change to any resource takes the next value. */
export const resourceVersionSeq = pgSequence("resource_version_seq", { startWith: 1 });

const timestamps = {
  createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull(),
};

const resourceVersion = bigint("resource_version", { mode: "number" }).notNull();

export const projects = pgTable(
  "projects",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    maxGpus: integer("max_gpus"),
    /** Whether the project's editors may use the take-over tier (`command`); set by an installation admin only. */
    allowCustomCommands: boolean("allow_custom_commands").notNull().default(false),
    resourceVersion,
    ...timestamps,
  },
  (t) => [uniqueIndex("projects_name_key").on(t.name), index("projects_created_idx").on(t.createdAt, t.id)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    role: text("role", { enum: ["viewer", "editor", "admin"] }).notNull(),
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    /** The first characters of the token, shown in lists so a key can be recognised. */
    tokenPrefix: text("token_prefix").notNull(),
    /** SHA-256 of the token (hex); the token itself is never stored. */
    tokenHash: text("token_hash").notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true, mode: "date" }),
    resourceVersion,
    ...timestamps,
  },
  (t) => [uniqueIndex("api_keys_token_hash_key").on(t.tokenHash), index("api_keys_created_idx").on(t.createdAt, t.id)],
);

export const clusters = pgTable(
  "clusters",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    joinTokenHash: text("join_token_hash"),
    joinTokenExpiresAt: timestamp("join_token_expires_at", { withTimezone: true, mode: "date" }),
    lastHeartbeatAt: timestamp("last_heartbeat_at", { withTimezone: true, mode: "date" }),
    agentVersion: text("agent_version"),
    /** Last inventory the agent reported; null until the first heartbeat. */
    inventory: jsonb("inventory"),
    resourceVersion,
    ...timestamps,
  },
  (t) => [uniqueIndex("clusters_name_key").on(t.name), index("clusters_created_idx").on(t.createdAt, t.id)],
);

export const agentCredentials = pgTable(
  "agent_credentials",
  {
    id: text("id").primaryKey(),
    clusterId: text("cluster_id")
      .notNull()
      .references(() => clusters.id, { onDelete: "cascade" }),
    tokenHash: text("token_hash").notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true, mode: "date" }),
    /** Set on the old credential when it is rotated: it works until then (the overlap window). */
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [uniqueIndex("agent_credentials_token_hash_key").on(t.tokenHash), index("agent_credentials_cluster_idx").on(t.clusterId)],
);

export const deployments = pgTable(
  "deployments",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "restrict" }),
    name: text("name").notNull(),
    labels: jsonb("labels").$type<Record<string, string>>().notNull(),
    spec: json("spec").notNull(),
    status: json("status").notNull(),
    /** Denormalised status.phase so lists can filter on it with an index. */
    phase: text("phase").notNull(),
    /** The cluster whose agent has taken the deployment; null while none has. */
    clusterId: text("cluster_id").references(() => clusters.id, { onDelete: "set null" }),
    /** Set when a user asked for deletion of a deployment an agent runs; the agent confirms removal. */
    deletionRequestedAt: timestamp("deletion_requested_at", { withTimezone: true, mode: "date" }),
    generation: integer("generation").notNull(),
    resourceVersion,
    /** The resourceVersion the deployment was created with: tells a watcher ADDED from MODIFIED. */
    createdVersion: bigint("created_version", { mode: "number" }).notNull(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex("deployments_project_name_key").on(t.projectId, t.name),
    index("deployments_created_idx").on(t.createdAt, t.id),
    index("deployments_project_created_idx").on(t.projectId, t.createdAt, t.id),
    index("deployments_resource_version_idx").on(t.resourceVersion),
  ],
);

/**
 * Every generation's spec (docs/design.md §3.1), written in the transaction that wrote the
 * generation, so the history is exactly the specs the deployment had. Only the newest
 * REVISIONS_RETAINED are kept (src/domain/revisions.ts); they go with their deployment.
 */
export const deploymentRevisions = pgTable(
  "deployment_revisions",
  {
    deploymentId: text("deployment_id")
      .notNull()
      .references(() => deployments.id, { onDelete: "cascade" }),
    generation: integer("generation").notNull(),
    spec: json("spec").notNull(),
    /** Who wrote it: { kind, keyId? } like the events' actor. */
    actor: json("actor").notNull(),
    /** The generation a rollback restored; null for any other write. */
    rollbackOf: integer("rollback_of"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.deploymentId, t.generation] })],
);

/**
 * What remains of a deleted deployment, so readers that follow changes by
 * resourceVersion (watchers, the agents' `desired` long-poll) learn of the deletion.
 */
/**
 * Deployment requests (docs/design.md §11): the defaulted request (immutable) and its plan. Deleting a
 * request keeps the deployment it created; deleting that deployment clears the link.
 */
export const deploymentRequests = pgTable(
  "deployment_requests",
  {
    id: text("id").primaryKey(),
    /** A request is a plan record: it goes with its project (whose deployments must be gone first). */
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    spec: json("spec").notNull(),
    status: json("status").notNull(),
    /** Denormalised status.phase. */
    phase: text("phase").notNull(),
    deploymentId: text("deployment_id").references(() => deployments.id, { onDelete: "set null" }),
    resourceVersion,
    ...timestamps,
  },
  (t) => [
    uniqueIndex("deployment_requests_project_name_key").on(t.projectId, t.name),
    index("deployment_requests_created_idx").on(t.createdAt, t.id),
    index("deployment_requests_project_created_idx").on(t.projectId, t.createdAt, t.id),
  ],
);

/**
 * Operations (docs/design.md §3.3): long-running work on a deployment's role or replica. They go
 * with their deployment. At most one Pending or Running operation of a kind per
 * (deployment, role, replica): a partial unique index, so two writers cannot both start one.
 */
export const operations = pgTable(
  "operations",
  {
    id: text("id").primaryKey(),
    deploymentId: text("deployment_id")
      .notNull()
      .references(() => deployments.id, { onDelete: "cascade" }),
    /** The deployment's project (deployments never move), for project-bound readers. */
    projectId: text("project_id").notNull(),
    kind: text("kind").notNull(),
    role: text("role").notNull(),
    replica: integer("replica"),
    phase: text("phase").notNull(),
    step: text("step").notNull(),
    params: json("params"),
    steps: json("steps").notNull(),
    message: text("message").notNull(),
    progress: json("progress"),
    result: json("result"),
    error: json("error"),
    startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }).notNull(),
    finishedAt: timestamp("finished_at", { withTimezone: true, mode: "date" }),
    resourceVersion,
    ...timestamps,
  },
  (t) => [
    index("operations_created_idx").on(t.createdAt, t.id),
    index("operations_project_created_idx").on(t.projectId, t.createdAt, t.id),
    index("operations_deployment_created_idx").on(t.deploymentId, t.createdAt, t.id),
    uniqueIndex("operations_active_key")
      .on(t.deploymentId, t.kind, t.role, sql`coalesce(${t.replica}, -1)`)
      .where(sql`phase in ('Pending', 'Running')`),
    // Retention purges finished operations by age (db/queries/retention.ts).
    index("operations_finished_idx").on(t.finishedAt).where(sql`finished_at is not null`),
  ],
);

/** The latest aggregated engine signals of each deployment (the agent overwrites them); they go with it. */
export const deploymentMetrics = pgTable("deployment_metrics", {
  deploymentId: text("deployment_id")
    .primaryKey()
    .references(() => deployments.id, { onDelete: "cascade" }),
  observedAt: timestamp("observed_at", { withTimezone: true, mode: "date" }).notNull(),
  receivedAt: timestamp("received_at", { withTimezone: true, mode: "date" }).notNull(),
  roles: json("roles").notNull(),
});

export const deploymentTombstones = pgTable(
  "deployment_tombstones",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    clusterId: text("cluster_id"),
    name: text("name").notNull(),
    /** Taken at deletion from the one sequence, so it orders with every other change. */
    resourceVersion,
    deletedAt: timestamp("deleted_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("deployment_tombstones_rv_idx").on(t.resourceVersion)],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    /** Who sent the key: keys are scoped per credential so two clients never collide. */
    principal: text("principal").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of method, path and body: a reuse with anything else is refused. */
    fingerprint: text("fingerprint").notNull(),
    completed: boolean("completed").notNull().default(false),
    responseStatus: integer("response_status"),
    responseHeaders: jsonb("response_headers").$type<Record<string, string>>(),
    responseBody: text("response_body"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.principal, t.key] }), index("idempotency_keys_expires_idx").on(t.expiresAt)],
);

export const nextResourceVersion = sql<number>`nextval('resource_version_seq')::bigint`;

/**
 * The event log (transactional outbox): each state change inserts its event in the same
 * transaction. Writers take one advisory lock just before inserting their event and hold
 * it to commit (db/queries/events.ts), so events commit in `seq` order and a reader that
 * resumes after seq N never misses a smaller seq that committed late.
 */
export const events = pgTable(
  "events",
  {
    seq: bigserial("seq", { mode: "number" }).primaryKey(),
    id: text("id").notNull(),
    type: text("type").notNull(),
    occurredAt: timestamp("occurred_at", { withTimezone: true, mode: "date" }).notNull(),
    /** Null for installation-wide events (clusters). */
    projectId: text("project_id"),
    deploymentId: text("deployment_id"),
    data: json("data").notNull(),
  },
  (t) => [
    uniqueIndex("events_id_key").on(t.id),
    index("events_project_seq_idx").on(t.projectId, t.seq),
    index("events_deployment_seq_idx").on(t.deploymentId, t.seq),
    // Each cluster's newest connection event is its announced state; retention keeps it (db/queries/retention.ts).
    index("events_cluster_connection_idx")
      .on(sql`(data->>'clusterId')`, t.seq)
      .where(sql`type in ('cluster.connected', 'cluster.disconnected')`),
  ],
);

/**
 * Webhook endpoints. Signing needs the secret itself (unlike API keys, which are stored as
 * hashes), so it is kept sealed with the server key (src/services/secrets.ts, §14.3); the
 * previous secret keeps signing for 24 h after a rotation. `startSeq` is the last event seq when the endpoint was created:
 * only later events go to it.
 */
export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: text("id").primaryKey(),
    /** Null for an installation-wide endpoint (every project's events). */
    projectId: text("project_id").references(() => projects.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    eventTypes: jsonb("event_types").$type<string[]>().notNull(),
    description: text("description").notNull(),
    enabled: boolean("enabled").notNull(),
    /** user | gone | failing; null while enabled. */
    disabledReason: text("disabled_reason"),
    /** Clear text from before secrets were sealed; the first start with a key seals it and clears this. */
    secret: text("secret"),
    previousSecret: text("previous_secret"),
    /** The signing secrets, sealed (s1.… envelopes bound to this row and column). */
    secretSealed: text("secret_sealed"),
    previousSecretSealed: text("previous_secret_sealed"),
    previousSecretExpiresAt: timestamp("previous_secret_expires_at", { withTimezone: true, mode: "date" }),
    /** Since when every attempt has failed; null while healthy. */
    failingSince: timestamp("failing_since", { withTimezone: true, mode: "date" }),
    startSeq: bigint("start_seq", { mode: "number" }).notNull(),
    resourceVersion,
    ...timestamps,
  },
  (t) => [
    index("webhook_endpoints_created_idx").on(t.createdAt, t.id),
    index("webhook_endpoints_project_created_idx").on(t.projectId, t.createdAt, t.id),
  ],
);

/**
 * One event to one endpoint. A pending delivery is due when `next_attempt_at` has passed;
 * a dispatcher claims it by pushing `next_attempt_at` one lease ahead and setting
 * `lease_token`, so a dispatcher that dies mid-send leaves it due again when the lease ends.
 */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    endpointId: text("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    /** pending | succeeded | failed */
    status: text("status").notNull(),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true, mode: "date" }),
    /** Attempts since the delivery was created or last redelivered: the position in the retry schedule. */
    runAttempts: integer("run_attempts").notNull(),
    /** The claim of the dispatcher sending it now; only that claim may record the outcome. */
    leaseToken: text("lease_token"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_endpoint_event_key").on(t.endpointId, t.eventId),
    index("webhook_deliveries_endpoint_created_idx").on(t.endpointId, t.createdAt, t.id),
    index("webhook_deliveries_due_idx").on(t.endpointId, t.nextAttemptAt).where(sql`status = 'pending'`),
    // Retention purges finished deliveries by age (db/queries/retention.ts).
    index("webhook_deliveries_finished_idx").on(t.updatedAt).where(sql`status <> 'pending'`),
  ],
);

/** Every attempt of a delivery, for the delivery log. */
export const webhookAttempts = pgTable(
  "webhook_attempts",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: "cascade" }),
    attemptedAt: timestamp("attempted_at", { withTimezone: true, mode: "date" }).notNull(),
    statusCode: integer("status_code"),
    latencyMs: integer("latency_ms").notNull(),
    /** At most 1 KiB of the response body. */
    responseSnippet: text("response_snippet"),
    error: text("error"),
  },
  (t) => [index("webhook_attempts_delivery_idx").on(t.deliveryId, t.id)],
);

/**
 * The one-row fan-out cursor: the last event seq turned into deliveries. The dispatcher
 * that holds its row lock fans out; the cursor moves in the same transaction as the
 * deliveries it creates, so a crash neither loses nor doubles a fan-out.
 */
export const webhookFanoutCursor = pgTable("webhook_fanout_cursor", {
  id: integer("id").primaryKey(),
  lastSeq: bigint("last_seq", { mode: "number" }).notNull(),
});

/**
 * Request rate-limit buckets (docs/design.md §14.2), shared by every API instance: one row per
 * API key, agent credential or client address, taken from by one upsert per request. Rows
 * idle for longer than a window are full again and are deleted by housekeeping.
 */
export const rateLimitBuckets = pgTable("rate_limit_buckets", {
  bucket: text("bucket").primaryKey(),
  tokens: doublePrecision("tokens").notNull(),
  updatedAtMs: bigint("updated_at_ms", { mode: "number" }).notNull(),
  /** Whether the latest take found a token (returned by the same statement). */
  allowed: boolean("allowed").notNull(),
});

/**
 * How far retention has purged each stream (docs/design.md §14.5): every row of `stream` at or
 * below `purged_through` (events: seq; deployment_tombstones: resourceVersion) may be gone, so
 * a cursor below it is answered 410. Kept as a row, not computed from MIN(), because a purge
 * that empties a table must still know what it removed.
 */
export const retentionHorizons = pgTable("retention_horizons", {
  stream: text("stream").primaryKey(),
  purgedThrough: bigint("purged_through", { mode: "number" }).notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull(),
});
