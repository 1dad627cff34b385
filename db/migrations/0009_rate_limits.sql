CREATE TABLE "rate_limit_buckets" (
	"bucket" text PRIMARY KEY NOT NULL,
	"tokens" double precision NOT NULL,
	"updated_at_ms" bigint NOT NULL,
	"allowed" boolean NOT NULL
);
