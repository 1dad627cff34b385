ALTER TABLE "webhook_endpoints" ALTER COLUMN "secret" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "secret_sealed" text;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "previous_secret_sealed" text;--> statement-breakpoint
-- Stored responses from before were kept in clear text (new API keys' tokens among them) and SQL has no
-- key to seal them: forgetting them only ends their replay window early.
DELETE FROM "idempotency_keys" WHERE "completed";
