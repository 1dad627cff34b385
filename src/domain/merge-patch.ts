// RFC 7396 JSON Merge Patch and a structural equality, both on plain JSON values.
import { InvalidRequest } from "./errors.ts";

/** Keys that name an object's prototype machinery; never data. */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/** An object key as an RFC 6901 pointer token: `~` → `~0`, `/` → `~1`. */
export const pointerToken = (key: string) => key.replace(/~/g, "~0").replace(/\//g, "~1");

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Applies `patch` to `target` per RFC 7396: objects merge, null deletes, everything else (arrays too) replaces.
 * `__proto__`, `constructor` and `prototype` are refused at any depth (400 at `pointer` + the key's path):
 * JSON.parse makes `__proto__` an own key, and assigning it would swap the result's prototype
 * rather than set a field. No field of any berth resource has one of these names.
 */
export function applyMergePatch(target: unknown, patch: unknown, pointer = ""): unknown {
  const refused = findPrototypeKey(patch, pointer);
  if (refused) {
    throw new InvalidRequest("The merge patch is not valid.", [
      { pointer: refused.pointer, message: `"${refused.key}" is not allowed as a key in a merge patch; no field has this name` },
    ]);
  }
  return merge(target, patch);
}

function merge(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (PROTOTYPE_KEYS.has(key)) continue; // refused above; never assigned, whoever calls merge
    if (value === null) delete result[key];
    else result[key] = merge(Object.hasOwn(result, key) ? result[key] : undefined, value);
  }
  return result;
}

/** The first prototype key in a JSON value (objects and arrays, any depth), with its pointer. */
export function findPrototypeKey(value: unknown, pointer = ""): { key: string; pointer: string } | undefined {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findPrototypeKey(value[i], `${pointer}/${i}`);
      if (found) return found;
    }
    return undefined;
  }
  if (!isObject(value)) return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (PROTOTYPE_KEYS.has(key)) return { key, pointer: `${pointer}/${pointerToken(key)}` };
    const found = findPrototypeKey(item, `${pointer}/${pointerToken(key)}`);
    if (found) return found;
  }
  return undefined;
}

/** Deep equality of JSON values; object key order does not matter. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const aKeys = Object.keys(a).filter((k) => a[k] !== undefined);
    const bKeys = Object.keys(b).filter((k) => b[k] !== undefined);
    return aKeys.length === bKeys.length && aKeys.every((k) => jsonEqual(a[k], b[k]));
  }
  return false;
}
