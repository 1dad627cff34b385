// `node --import ./test/repo/no-tsx.mjs …`: makes tsx unresolvable, so a process that reaches
// for it (the TypeScript fallback of bin/berth.js) fails instead of quietly compiling source.
import { register } from "node:module";

register(
  "data:text/javascript," +
    encodeURIComponent(`
export async function resolve(specifier, context, next) {
  if (specifier === "tsx" || specifier.startsWith("tsx/")) {
    const error = new Error("tsx is not available to the compiled build: " + specifier);
    error.code = "ERR_MODULE_NOT_FOUND";
    throw error;
  }
  const resolved = await next(specifier, context);
  if (resolved.url.endsWith(".ts")) throw new Error("the compiled build loaded TypeScript source: " + resolved.url);
  return resolved;
}
`),
);
