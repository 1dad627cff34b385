// Bounds on the `data` an agent posts with an event (docs/design.md §14.7). Agent events fan
// out to every matching webhook endpoint, so an unbounded `data` would be multiplied into
// every receiver's deliveries and every stream; 16 KiB of JSON is far above anything the
// agent writes (a scaled event with 64 signals is about 8 KiB).
import type { FieldError } from "./errors.ts";
import { PROTOTYPE_KEYS, pointerToken } from "./merge-patch.ts";

export const EVENT_DATA_LIMITS = { bytes: 16 * 1024, depth: 8, keys: 512 } as const;

export type EventDataVerdict =
  | { ok: true }
  | { ok: false; tooLarge: true; bytes: number; error: FieldError }
  | { ok: false; tooLarge: false; errors: FieldError[] };

export function checkEventData(data: unknown, limits: { bytes: number; depth: number; keys: number } = EVENT_DATA_LIMITS): EventDataVerdict {
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return { ok: false, tooLarge: false, errors: [{ pointer: "/data", message: "must be a JSON object" }] };
  }
  const errors: FieldError[] = [];
  let keys = 0;
  const walk = (value: unknown, pointer: string, depth: number) => {
    if (typeof value !== "object" || value === null || errors.length > 0) return;
    if (depth > limits.depth) {
      errors.push({ pointer, message: `is nested more than ${limits.depth} levels deep; flatten it` });
      return;
    }
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${pointer}/${i}`, depth + 1));
      return;
    }
    for (const [key, item] of Object.entries(value)) {
      if (PROTOTYPE_KEYS.has(key)) {
        errors.push({ pointer: `${pointer}/${pointerToken(key)}`, message: `"${key}" is not allowed as a key; rename it` });
        return;
      }
      if (++keys > limits.keys) {
        errors.push({ pointer: "/data", message: `has more than ${limits.keys} keys in all; send fewer` });
        return;
      }
      walk(item, `${pointer}/${pointerToken(key)}`, depth + 1);
    }
  };
  walk(data, "/data", 1);
  if (errors.length > 0) return { ok: false, tooLarge: false, errors };
  const bytes = new TextEncoder().encode(JSON.stringify(data)).length;
  if (bytes > limits.bytes) {
    return {
      ok: false,
      tooLarge: true,
      bytes,
      error: { pointer: "/data", message: `is ${bytes} bytes as JSON; the limit is ${limits.bytes} bytes (16 KiB); send less` },
    };
  }
  return { ok: true };
}
