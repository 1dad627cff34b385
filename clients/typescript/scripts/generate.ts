// Generates clients/typescript/src/schema.ts from the committed openapi/openapi.json with
// openapi-typescript (the same options as its CLI with --default-non-nullable false, so
// defaulted fields stay optional). The drift test calls renderSchemaTypes() and compares.
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";

export const OPENAPI_DOCUMENT = fileURLToPath(new URL("../../../openapi/openapi.json", import.meta.url));
export const SCHEMA_FILE = fileURLToPath(new URL("../src/schema.ts", import.meta.url));

/** The TypeScript that openapi-typescript emits for an OpenAPI document (its text). */
export async function renderSchemaTypes(documentText: string): Promise<string> {
  const ast = await openapiTS(documentText, { defaultNonNullable: false });
  return COMMENT_HEADER + astToString(ast);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const source = await renderSchemaTypes(await readFile(OPENAPI_DOCUMENT, "utf8"));
  await writeFile(SCHEMA_FILE, source);
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
