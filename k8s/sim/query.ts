// Query parameters as kube-apiserver reads them. Booleans follow Go's strconv.ParseBool, which
// the official clients rely on: the Python client sends `watch=True` and `force=True`.
import { errors } from "./objects.ts";

const TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** strconv.ParseBool: true, false, or undefined for anything else (the empty string too). */
export function parseGoBool(text: string): boolean | undefined {
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  return undefined;
}

/** The boolean query parameter `key` (`fallback` when absent); a value ParseBool refuses is a 400 naming it. */
export function boolParam(params: URLSearchParams, key: string, fallback = false): boolean {
  const raw = params.get(key);
  if (raw === null) return fallback;
  const value = parseGoBool(raw);
  if (value === undefined) {
    throw errors.badRequest(`${key}: Invalid value: ${JSON.stringify(raw)}: must be a boolean as Go's strconv.ParseBool reads it: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false or False`);
  }
  return value;
}

/** The integer query parameter `key`, undefined when absent or empty. */
export function intParam(params: URLSearchParams, key: string): number | undefined {
  const raw = params.get(key);
  if (raw === null || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw errors.badRequest(`${key}: Invalid value: "${raw}": must be an integer`);
  return value;
}

/** The boolean query parameters of kube-apiserver's list, watch, write, delete and log options. */
export const BOOLEAN_PARAMETERS = [
  "watch",
  "allowWatchBookmarks",
  "sendInitialEvents",
  "pretty",
  "force",
  "orphanDependents",
  "follow",
  "previous",
  "timestamps",
  "insecureSkipTLSVerifyBackend",
  "ignoreStoreReadErrorWithClusterBreakingPotential",
] as const;

/** Rejects (400) the first boolean parameter present whose value ParseBool refuses. */
export function checkBooleanParams(params: URLSearchParams): void {
  for (const key of BOOLEAN_PARAMETERS) boolParam(params, key);
}
