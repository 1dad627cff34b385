ALTER TABLE "agent_credentials" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "agent_credentials_cluster_idx" ON "agent_credentials" USING btree ("cluster_id");
