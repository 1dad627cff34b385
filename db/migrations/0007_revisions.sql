CREATE TABLE "deployment_revisions" (
	"deployment_id" text NOT NULL,
	"generation" integer NOT NULL,
	"spec" json NOT NULL,
	"actor" json NOT NULL,
	"rollback_of" integer,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "deployment_revisions_deployment_id_generation_pk" PRIMARY KEY("deployment_id","generation")
);
--> statement-breakpoint
ALTER TABLE "deployment_revisions" ADD CONSTRAINT "deployment_revisions_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Deployments created before revisions were recorded: their current generation becomes the
-- first revision, so no history is ever empty. Who wrote it is not known any more: actor system.
INSERT INTO "deployment_revisions" ("deployment_id", "generation", "spec", "actor", "rollback_of", "created_at")
SELECT "id", "generation", "spec", '{"kind":"system"}'::json, NULL, "updated_at" FROM "deployments";
