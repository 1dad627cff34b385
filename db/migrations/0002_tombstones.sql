CREATE TABLE "deployment_tombstones" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"cluster_id" text,
	"name" text NOT NULL,
	"resource_version" bigint NOT NULL,
	"deleted_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "deployment_tombstones_rv_idx" ON "deployment_tombstones" USING btree ("resource_version");