// The limits every schema shares (docs/design.md §14.1). They are declared in the zod schemas,
// so the same numbers bound what a request may carry at run time and appear in the OpenAPI
// document (maxLength, maxItems, maxProperties, minimum/maximum, format). Each is far above
// what a legitimate caller sends; they exist to bound the work one request can cause.
import { z } from "zod";

export const LIMITS = {
  /** Prefixed ids (dep_…, prj_…): a prefix and a UUID or ULID. */
  id: 64,
  /** Names and other identifiers that are not DNS labels. */
  name: 256,
  /** One-line free text: summaries, reasons, titles. */
  shortText: 1024,
  /** Free text that explains: messages, details, descriptions. */
  text: 4096,
  /** URLs (RFC 3986 has no limit; browsers and proxies stop near 2 KiB to 8 KiB). */
  url: 2048,
  /** RFC 3339 timestamps are at most 35 characters; room for a longer fraction. */
  timestamp: 64,
  /** Opaque tokens and cursors. */
  token: 512,
  /** Entries of a map (labels, annotations) and items of a list that is not a page. */
  mapEntries: 64,
  /** Items of a list answer: the largest page a list route serves. */
  page: 1000,
  /** Kubernetes label key: a 253-character DNS prefix, '/', a 63-character name. */
  labelKey: 317,
  /** Kubernetes label value. */
  labelValue: 63,
} as const;

const INT32_MAX = 2 ** 31 - 1;

/**
 * An integer within [min, max], declared with the OpenAPI format its range needs: int32 when
 * it fits, int64 otherwise (JSON numbers are exact up to 2^53, so max is at most that).
 */
export function boundedInt(min: number, max: number) {
  const format = min >= -INT32_MAX - 1 && max <= INT32_MAX ? "int32" : "int64";
  return z.int().min(min).max(max).meta({ format });
}

/** A count or version that only grows: 0 up to the largest exact JSON integer. */
export const counter = () => boundedInt(0, Number.MAX_SAFE_INTEGER);

/** A string of at most `max` characters (the common case for text without a syntax). */
export const text = (max: number = LIMITS.text) => z.string().max(max);

/** A prefixed id as stored: letters, digits, '_' and '-'. */
export const id = () => z.string().max(LIMITS.id).regex(/^[A-Za-z0-9_-]+$/, { error: "must be an id such as dep_…" });

/** An RFC 3339 timestamp as the API writes it (UTC, `Z`). */
export const timestamp = () => z.iso.datetime({ offset: true }).max(LIMITS.timestamp);

/** A map of at most `max` entries, refused past that with the limit named. */
export function boundedRecord<K extends z.core.$ZodRecordKey, V extends z.ZodType>(key: K, value: V, max: number = LIMITS.mapEntries) {
  return z
    .record(key, value)
    .refine((entries) => Object.keys(entries).length <= max, { error: `must have at most ${max} entries; remove some` })
    .meta({ maxProperties: max });
}
