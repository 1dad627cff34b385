#!/usr/bin/env node
// `npm run build [-- --out-dir DIR]`: the run-time code as ESM JavaScript, so `berth` starts on
// plain Node without compiling TypeScript at each start (docs/decisions/0058-compiled-build.md).
//
// 1. tsc -p tsconfig.build.json --noCheck: emit only (the type check is `npm run typecheck`);
//    rewriteRelativeImportExtensions turns the `.ts` specifiers into `.js`.
// 2. The files read next to their modules through import.meta.url (the simulated cluster's
//    OpenAPI definitions and protobuf schema, the database migrations) are copied beside them.
// 3. <out>/bin/berth.js starts <out>/src/cli/main.js: code that finds the CLI relative to itself
//    (the simulated cluster's `../../bin/berth.js`) runs the compiled build too.
//
// The output directory must lie inside the repository so that node_modules resolves from it.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ASSET_ROOTS = ["src", "k8s", "db", "routes"];
/** Source, documentation and generators' inputs stay behind; everything else is read at run time. */
const NOT_ASSETS = new Set([".ts", ".md", ".yaml"]);

function parseOutDir(argv) {
  const at = argv.indexOf("--out-dir");
  if (at === -1) return join(root, "dist");
  const value = argv[at + 1];
  if (!value) throw new Error("--out-dir needs a directory");
  return resolve(value);
}

function* assetFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* assetFiles(path);
    else if (entry.isFile() && !NOT_ASSETS.has(extname(entry.name))) yield path;
  }
}

const outDir = parseOutDir(process.argv.slice(2));
if (relative(root, outDir).startsWith("..") || outDir === root) {
  throw new Error(`--out-dir ${outDir} must be a directory inside ${root} (node_modules resolves from there)`);
}
rmSync(outDir, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--noCheck", "--outDir", outDir], { stdio: "inherit" });

let copied = 0;
for (const assetRoot of ASSET_ROOTS) {
  for (const file of assetFiles(join(root, assetRoot))) {
    const target = join(outDir, relative(root, file));
    mkdirSync(dirname(target), { recursive: true });
    cpSync(file, target);
    copied += 1;
  }
}

// An out-dir outside the repository's package.json scope would read the .js files as CommonJS.
writeFileSync(join(outDir, "package.json"), `${JSON.stringify({ type: "module", private: true }, null, 2)}\n`);
mkdirSync(join(outDir, "bin"), { recursive: true });
writeFileSync(
  join(outDir, "bin", "berth.js"),
  "#!/usr/bin/env node\n// Written by scripts/build.mjs: the compiled CLI, found relative to this file.\nawait import(\"../src/cli/main.js\");\n",
);
process.stdout.write(`berth build: ${relative(root, outDir) || "."} (${copied} asset files)\n`);
