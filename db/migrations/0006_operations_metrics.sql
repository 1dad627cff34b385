CREATE TABLE "deployment_metrics" (
	"deployment_id" text PRIMARY KEY NOT NULL,
	"observed_at" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone NOT NULL,
	"roles" json NOT NULL
);
--> statement-breakpoint
CREATE TABLE "operations" (
	"id" text PRIMARY KEY NOT NULL,
	"deployment_id" text NOT NULL,
	"project_id" text NOT NULL,
	"kind" text NOT NULL,
	"role" text NOT NULL,
	"replica" integer,
	"phase" text NOT NULL,
	"step" text NOT NULL,
	"params" json,
	"steps" json NOT NULL,
	"message" text NOT NULL,
	"progress" json,
	"result" json,
	"error" json,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	"resource_version" bigint NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deployment_metrics" ADD CONSTRAINT "deployment_metrics_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "operations" ADD CONSTRAINT "operations_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "operations_created_idx" ON "operations" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "operations_project_created_idx" ON "operations" USING btree ("project_id","created_at","id");--> statement-breakpoint
CREATE INDEX "operations_deployment_created_idx" ON "operations" USING btree ("deployment_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "operations_active_key" ON "operations" USING btree ("deployment_id","kind","role",coalesce("replica", -1)) WHERE phase in ('Pending', 'Running');