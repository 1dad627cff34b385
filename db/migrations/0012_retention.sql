CREATE TABLE "retention_horizons" (
	"stream" text PRIMARY KEY NOT NULL,
	"purged_through" bigint NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_finished_idx" ON "webhook_deliveries" USING btree ("updated_at") WHERE status <> 'pending';--> statement-breakpoint
CREATE INDEX "operations_finished_idx" ON "operations" USING btree ("finished_at") WHERE finished_at is not null;--> statement-breakpoint
CREATE INDEX "events_cluster_connection_idx" ON "events" USING btree ((data->>'clusterId'),"seq") WHERE type in ('cluster.connected', 'cluster.disconnected');
