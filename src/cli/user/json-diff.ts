// The JSON pointers (RFC 6901) at which two JSON values differ, for `berth apply`'s
// report: objects compare key by key, arrays index by index, anything else by value.
// An absent side is undefined.

export interface JsonChange {
  pointer: string;
  before: unknown;
  after: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

export function diffJson(before: unknown, after: unknown, pointer = ""): JsonChange[] {
  if (isObject(before) && isObject(after)) {
    const keys = [...Object.keys(before), ...Object.keys(after).filter((key) => !(key in before))];
    return keys.flatMap((key) => diffJson(before[key], after[key], `${pointer}/${escapePointerToken(key)}`));
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const length = Math.max(before.length, after.length);
    return Array.from({ length }, (_, i) => diffJson(before[i], after[i], `${pointer}/${i}`)).flat();
  }
  return jsonEqual(before, after) ? [] : [{ pointer, before, after }];
}

export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && jsonEqual(a[key], b[key]));
  }
  return false;
}
