CREATE TABLE "deployment_requests" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"spec" json NOT NULL,
	"status" json NOT NULL,
	"phase" text NOT NULL,
	"deployment_id" text,
	"resource_version" bigint NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deployment_requests" ADD CONSTRAINT "deployment_requests_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deployment_requests" ADD CONSTRAINT "deployment_requests_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "deployment_requests_project_name_key" ON "deployment_requests" USING btree ("project_id","name");--> statement-breakpoint
CREATE INDEX "deployment_requests_created_idx" ON "deployment_requests" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "deployment_requests_project_created_idx" ON "deployment_requests" USING btree ("project_id","created_at","id");