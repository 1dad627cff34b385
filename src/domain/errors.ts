// Typed domain errors: services throw these, and one table in src/api/problem.ts
// maps them to HTTP status and RFC 9457 problem types. Nothing here knows HTTP.

/** One problem in a request, located by an RFC 6901 JSON pointer into the body. */
export interface FieldError {
  pointer: string;
  message: string;
}

/** One problem in a query parameter or header, which a JSON pointer cannot locate. */
export interface ParameterError {
  parameter?: string;
  header?: string;
  message: string;
}

export abstract class DomainError extends Error {
  abstract readonly kind: string;
  /** Extra members copied into the problem body (e.g. needed/available for quota). */
  readonly extensions: Record<string, unknown>;
  constructor(message: string, extensions: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.extensions = extensions;
  }
}

/** The body is not well-formed for the schema: types, unknown fields, missing required fields. */
export class InvalidRequest extends DomainError {
  readonly kind = "invalid-request";
  constructor(message: string, readonly errors: Array<FieldError | ParameterError> = []) {
    super(message);
  }
}

/** The request body could not be read as JSON at all. */
export class MalformedBody extends DomainError {
  readonly kind = "malformed-body";
}

export class UnsupportedMediaType extends DomainError {
  readonly kind = "unsupported-media-type";
}

export class PayloadTooLarge extends DomainError {
  readonly kind = "payload-too-large";
}

/** The body is well-formed but breaks an admission rule (shape, fit, owned flags, identity). */
export class InvalidSpec extends DomainError {
  readonly kind = "invalid-spec";
  constructor(message: string, readonly errors: FieldError[]) {
    super(message);
  }
}

export class Unauthorized extends DomainError {
  readonly kind = "unauthorized";
}

export class Forbidden extends DomainError {
  readonly kind = "forbidden";
}

/** A 403 caused by particular fields of the request: `errors[]` points at each. */
export class ForbiddenFields extends Forbidden {
  constructor(message: string, readonly errors: FieldError[]) {
    super(message);
  }
}

export class QuotaExceeded extends DomainError {
  readonly kind = "quota-exceeded";
  constructor(message: string, readonly needed: number, readonly available: number, readonly limit: number) {
    super(message, { needed, available, limit });
  }
}

export class NotFound extends DomainError {
  readonly kind = "not-found";
}

export class Conflict extends DomainError {
  readonly kind = "conflict";
}

export class PreconditionFailed extends DomainError {
  readonly kind = "precondition-failed";
  constructor(message: string, readonly currentETag: string) {
    super(message, { currentETag });
  }
}

/** Idempotency-Key reused with a different body. */
export class IdempotencyMismatch extends DomainError {
  readonly kind = "idempotency-key-reused";
}

/** Idempotency-Key reused while the first request is still running. */
export class IdempotencyInFlight extends DomainError {
  readonly kind = "idempotency-key-in-flight";
}

/** A dependency (the database) is not available; the client may retry. */
export class ServiceUnavailable extends DomainError {
  readonly kind = "unavailable";
}

/** A request rate limit is used up: the problem names the policy and when to retry (429). */
export class RateLimited extends DomainError {
  readonly kind = "rate-limited";
  constructor(message: string, readonly policy: string, readonly limit: number, readonly windowSeconds: number, readonly retryAfterSeconds: number) {
    super(message, { policy, limit, windowSeconds, retryAfterSeconds });
  }
}

/** Too many streams or long-polls of one key are open at once (429). */
export class TooManyOpen extends DomainError {
  readonly kind = "too-many-open";
  constructor(message: string, readonly open: number, readonly limit: number, readonly retryAfterSeconds: number) {
    super(message, { open, limit, retryAfterSeconds });
  }
}

/** Creating one more would pass a configured cap on how many may exist (409). */
export class LimitReached extends DomainError {
  readonly kind = "limit-reached";
  constructor(message: string, readonly count: number, readonly limit: number) {
    super(message, { count, limit });
  }
}

/**
 * A cursor older than what retention keeps (docs/design.md §14.5): rows after it may have been
 * purged. `purgedThrough` is the horizon; every row after it is still there, so
 * `oldestAvailable` (purgedThrough + 1) is the oldest sequence or version a reader can rely on.
 */
export class Gone extends DomainError {
  readonly kind = "gone";
  constructor(message: string, readonly purgedThrough: number) {
    super(message, { purgedThrough, oldestAvailable: purgedThrough + 1 });
  }
}
