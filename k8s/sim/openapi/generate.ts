// Writes definitions.json: the OpenAPI schemas of every kind in resources.ts and of everything
// they reference, read from the type declarations of the `kubernetes-models` package (generated
// by its authors from the upstream Kubernetes OpenAPI document: descriptions, required fields,
// enums). Run after upgrading kubernetes-models: `npm run sim:openapi`; a test fails when the
// committed file differs from what this produces.
//
// The declarations flatten a few upstream details, restored here: numbers are `integer`
// (no served kind has a floating-point field), Time/MicroTime are `date-time` strings,
// IntOrString is `int-or-string`, Quantity is a string that also takes a number.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { RESOURCES, type ResourceType } from "../resources.ts";

export type Schema = Record<string, unknown>;

const require = createRequire(import.meta.url);
const MODELS_ROOT = dirname(require.resolve("kubernetes-models/package.json"));
const MACHINERY_ROOT = dirname(require.resolve("@kubernetes-models/apimachinery/package.json"));
export const DEFINITIONS_PATH = join(dirname(fileURLToPath(import.meta.url)), "definitions.json");

/** `apps/v1/Deployment.d.ts` → `io.k8s.api.apps.v1.Deployment`; apimachinery keeps its Go package path. */
function definitionName(file: string): string {
  const base = file.replace(/\.d\.ts$/, "");
  if (base.startsWith(MACHINERY_ROOT)) return `io.k8s.apimachinery.pkg.${relative(MACHINERY_ROOT, base).split("/").join(".")}`;
  const parts = relative(MODELS_ROOT, base).split("/");
  if (parts.length === 2) return `io.k8s.api.core.${parts.join(".")}`;
  return `io.k8s.api.${parts[0]!.split(".")[0]}.${parts.slice(1).join(".")}`;
}

export function kindFile(resource: Pick<ResourceType, "group" | "version" | "kind">): string {
  return resource.group === "" ? join(MODELS_ROOT, resource.version, `${resource.kind}.d.ts`) : join(MODELS_ROOT, resource.group, resource.version, `${resource.kind}.d.ts`);
}

interface ParsedFile {
  source: ts.SourceFile;
  imports: Map<string, string>;
  /** Exported alias (`IIoK8sApiCoreV1Pod`) → local declaration name (`IPod`). */
  aliases: Map<string, string>;
}

const parsed = new Map<string, ParsedFile>();

function parseFile(file: string): ParsedFile {
  const cached = parsed.get(file);
  if (cached) return cached;
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
  const imports = new Map<string, string>();
  const aliases = new Map<string, string>();
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const specifier = statement.moduleSpecifier.text;
      const target = specifier.startsWith(".")
        ? resolve(dirname(file), `${specifier.replace(/\.js$/, "")}.d.ts`)
        : specifier.startsWith("@kubernetes-models/apimachinery/")
          ? join(MACHINERY_ROOT, `${specifier.slice("@kubernetes-models/apimachinery/".length).replace(/\.js$/, "")}.d.ts`)
          : undefined;
      const names = statement.importClause?.namedBindings;
      if (target && names && ts.isNamedImports(names)) for (const element of names.elements) imports.set(element.name.text, target);
    }
    if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) if (element.propertyName) aliases.set(element.name.text, element.propertyName.text);
    }
  }
  const result = { source, imports, aliases };
  parsed.set(file, result);
  return result;
}

function docOf(node: ts.Node): string | undefined {
  const tags = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const text = tags.map((tag) => ts.getTextOfJSDocComment(tag.comment) ?? "").join("\n").trim();
  return text === "" ? undefined : text;
}

class Collector {
  readonly definitions: Record<string, Schema> = {};

  /** The definition behind `alias` exported from `file`; returns its name. */
  define(file: string, alias: string): string {
    const name = definitionName(file);
    if (this.definitions[name]) return name;
    const { source, aliases } = parseFile(file);
    const local = aliases.get(alias) ?? alias;
    const declaration = source.statements.find(
      (s): s is ts.InterfaceDeclaration | ts.TypeAliasDeclaration => (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) && s.name.text === local,
    );
    if (!declaration) throw new Error(`${file}: no declaration ${local} (exported as ${alias})`);
    this.definitions[name] = {}; // placeholder against recursion (JSONSchemaProps refers to itself)
    const description = docOf(declaration);
    let schema: Schema;
    if (ts.isTypeAliasDeclaration(declaration)) schema = this.alias(name, declaration.type, file);
    else {
      const properties: Record<string, Schema> = {};
      const required: string[] = [];
      for (const member of declaration.members) {
        if (!ts.isPropertySignature(member) || !member.type) continue;
        const key = ts.isStringLiteral(member.name) || ts.isIdentifier(member.name) ? member.name.text : member.name.getText(source);
        const isTypeMeta = key === "apiVersion" || key === "kind";
        if (!member.questionToken && !isTypeMeta) required.push(key);
        const fieldDoc = docOf(member);
        properties[key] = this.described(isTypeMeta ? { type: "string" } : this.type(member.type, file), fieldDoc);
      }
      schema = { type: "object", ...(Object.keys(properties).length > 0 && { properties }), ...(required.length > 0 && { required }) };
    }
    this.definitions[name] = { ...(description && { description }), ...schema };
    return name;
  }

  private alias(name: string, type: ts.TypeNode, file: string): Schema {
    if (name.endsWith(".Time") || name.endsWith(".MicroTime")) return { type: "string", format: "date-time" };
    if (name.endsWith(".IntOrString")) return { type: "string", format: "int-or-string" };
    if (name.endsWith(".Quantity")) return { type: "string", "x-berth-accepts-number": true };
    return this.type(type, file);
  }

  /** A field's description sits beside a `$ref` through `allOf`, as upstream's v3 documents write it. */
  private described(schema: Schema, description: string | undefined): Schema {
    if (!description) return schema;
    if (schema.$ref) return { allOf: [schema], description };
    return { ...schema, description };
  }

  private type(node: ts.TypeNode, file: string): Schema {
    switch (node.kind) {
      case ts.SyntaxKind.StringKeyword:
        return { type: "string" };
      case ts.SyntaxKind.NumberKeyword:
        return { type: "integer" };
      case ts.SyntaxKind.BooleanKeyword:
        return { type: "boolean" };
      case ts.SyntaxKind.AnyKeyword:
      case ts.SyntaxKind.UnknownKeyword:
        return { "x-kubernetes-preserve-unknown-fields": true };
    }
    if (ts.isParenthesizedTypeNode(node)) return this.type(node.type, file);
    if (ts.isLiteralTypeNode(node) && ts.isStringLiteral(node.literal)) return { type: "string", enum: [node.literal.text] };
    if (ts.isUnionTypeNode(node)) {
      const literals = node.types.filter((t): t is ts.LiteralTypeNode => ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal));
      if (literals.length === node.types.length) return { type: "string", enum: literals.map((t) => (t.literal as ts.StringLiteral).text) };
      const kinds = new Set(node.types.map((t) => t.kind));
      if (kinds.has(ts.SyntaxKind.StringKeyword)) return { type: "string", "x-berth-accepts-number": kinds.has(ts.SyntaxKind.NumberKeyword) || undefined };
      throw new Error(`${file}: unsupported union ${node.getText()}`);
    }
    if (ts.isArrayTypeNode(node)) return { type: "array", items: this.type(node.elementType, file) };
    if (ts.isTypeLiteralNode(node)) {
      const index = node.members.find(ts.isIndexSignatureDeclaration);
      if (index) return { type: "object", additionalProperties: this.type(index.type, file) };
      if (node.members.length === 0) return { type: "object" };
      throw new Error(`${file}: unsupported type literal ${node.getText()}`);
    }
    if (ts.isTypeReferenceNode(node)) {
      const name = node.typeName.getText();
      if (name === "Array" && node.typeArguments?.length === 1) return { type: "array", items: this.type(node.typeArguments[0]!, file) };
      if (name === "Record" && node.typeArguments?.length === 2) return { type: "object", additionalProperties: this.type(node.typeArguments[1]!, file) };
      const target = parseFile(file).imports.get(name);
      if (target) return { $ref: `#/definitions/${this.define(target, name)}` };
      if (parseFile(file).aliases.has(name) || parseFile(file).source.statements.some((s) => (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) && s.name.text === name)) {
        return { $ref: `#/definitions/${this.define(file, name)}` };
      }
      throw new Error(`${file}: unresolved type ${name}`);
    }
    throw new Error(`${file}: unsupported type ${ts.SyntaxKind[node.kind]} ${node.getText()}`);
  }
}

/** The definitions of every served kind (and Status), with undefined values dropped and keys sorted. */
export function collectDefinitions(): { source: string; definitions: Record<string, Schema> } {
  const collector = new Collector();
  for (const resource of RESOURCES) {
    const file = kindFile(resource);
    const alias = [...parseFile(file).aliases.keys()].find((a) => a.startsWith("I") && parseFile(file).aliases.get(a) === `I${resource.kind}`);
    if (!alias) throw new Error(`${file}: no exported interface for ${resource.kind}`);
    collector.define(file, alias);
  }
  collector.define(join(MACHINERY_ROOT, "apis/meta/v1/Status.d.ts"), "IIoK8sApimachineryPkgApisMetaV1Status");
  const version = (JSON.parse(readFileSync(join(MODELS_ROOT, "package.json"), "utf8")) as { version: string }).version;
  const sorted = Object.fromEntries(Object.entries(collector.definitions).sort(([a], [b]) => a.localeCompare(b)));
  return { source: `kubernetes-models ${version}`, definitions: JSON.parse(JSON.stringify(sorted)) as Record<string, Schema> };
}

export function renderDefinitionsFile(): string {
  return JSON.stringify(collectDefinitions(), null, 1) + "\n";
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(DEFINITIONS_PATH, renderDefinitionsFile());
  process.stdout.write(`wrote ${DEFINITIONS_PATH}\n`);
}
