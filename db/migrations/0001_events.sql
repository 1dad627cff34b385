CREATE TABLE "events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"type" text NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"project_id" text,
	"deployment_id" text,
	"data" json NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "events_id_key" ON "events" USING btree ("id");--> statement-breakpoint
CREATE INDEX "events_project_seq_idx" ON "events" USING btree ("project_id","seq");--> statement-breakpoint
CREATE INDEX "events_deployment_seq_idx" ON "events" USING btree ("deployment_id","seq");