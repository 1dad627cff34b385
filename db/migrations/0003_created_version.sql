ALTER TABLE "deployments" ADD COLUMN "created_version" bigint;--> statement-breakpoint
UPDATE "deployments" SET "created_version" = "resource_version";--> statement-breakpoint
ALTER TABLE "deployments" ALTER COLUMN "created_version" SET NOT NULL;
