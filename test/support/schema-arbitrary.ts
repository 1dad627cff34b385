// JSON Schema → fast-check arbitrary, for the subset the OpenAPI document uses: type
// (arrays of types for nullable), enum, const, format (date-time, uri, …), pattern (via
// fc.stringMatching), minimum/maximum and their exclusive forms, minLength/maxLength,
// items/minItems/maxItems, properties/required/additionalProperties, oneOf/anyOf/allOf
// and `$ref` into the components. Values generated are meant to validate against the
// schema (openapi-fuzz.test.ts checks that with ajv); unknown keywords fail loudly, so a
// keyword added to the document later is noticed instead of silently ignored.
import fc from "fast-check";
import { resolveRef, type OpenApiDocument, type Schema } from "./openapi-document.ts";

/** Keywords that only annotate; everything else must be understood below. */
const ANNOTATIONS = new Set(["description", "title", "example", "examples", "default", "deprecated", "readOnly", "writeOnly", "$comment"]);
const UNDERSTOOD = new Set([
  "$ref", "type", "enum", "const", "format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
  "minLength", "maxLength", "items", "minItems", "maxItems", "uniqueItems", "properties", "required",
  "additionalProperties", "propertyNames", "minProperties", "maxProperties", "oneOf", "anyOf", "allOf",
]);

/** Beyond this depth of nesting only what is required is generated, so recursive schemas end. */
const DEEP = 6;
/** Arrays and maps without a smaller bound get at most this many entries: requests stay small. */
const FEW = 3;

export interface SchemaArbitraryOptions {
  /** Replaces the arbitrary for a schema this returns one for (e.g. a deployment spec known to be admitted). */
  override?: (schema: Schema, depth: number) => fc.Arbitrary<unknown> | undefined;
}

export function arbitraryFromSchema(doc: OpenApiDocument, schema: Schema, options: SchemaArbitraryOptions = {}): fc.Arbitrary<unknown> {
  const build = (raw: Schema, depth: number): fc.Arbitrary<unknown> => {
    if (raw === true) return fc.jsonValue({ maxDepth: 1 });
    if (raw === false) throw new Error("a `false` schema admits no value");
    const schema = resolveRef<Exclude<Schema, boolean>>(doc, raw);
    const overridden = options.override?.(schema, depth);
    if (overridden) return overridden;
    for (const keyword of Object.keys(schema)) {
      if (!UNDERSTOOD.has(keyword) && !ANNOTATIONS.has(keyword)) throw new Error(`schema keyword ${keyword} is not supported by the generator`);
    }
    if ("const" in schema) return fc.constant(schema.const);
    if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
    if (Array.isArray(schema.allOf)) return build(mergeAll(schema, schema.allOf.map((s: Schema) => resolveRef(doc, s))), depth);
    const branches = schema.oneOf ?? schema.anyOf;
    if (Array.isArray(branches)) {
      const { oneOf: _o, anyOf: _a, ...rest } = schema;
      return fc.oneof(...branches.map((branch: Schema) => build(mergeAll(rest, [resolveRef(doc, branch)]), depth)));
    }
    const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : ["object"];
    return fc.oneof(...types.map((type) => ofType(type, schema, depth)));
  };

  const ofType = (type: string, schema: Record<string, any>, depth: number): fc.Arbitrary<unknown> => {
    switch (type) {
      case "null":
        return fc.constant(null);
      case "boolean":
        return fc.boolean();
      case "integer":
        return fc.integer(integerBounds(schema));
      case "number":
        return fc.double({
          min: schema.minimum ?? schema.exclusiveMinimum ?? -1e9,
          max: schema.maximum ?? schema.exclusiveMaximum ?? 1e9,
          minExcluded: schema.exclusiveMinimum !== undefined,
          maxExcluded: schema.exclusiveMaximum !== undefined,
          noNaN: true,
          noDefaultInfinity: true,
        });
      case "string":
        return stringArbitrary(schema);
      case "array": {
        const minLength = schema.minItems ?? 0;
        const maxLength = depth >= DEEP ? minLength : Math.max(minLength, Math.min(schema.maxItems ?? FEW, FEW));
        const item = build(schema.items ?? true, depth + 1);
        return schema.uniqueItems
          ? fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
          : fc.array(item, { minLength, maxLength });
      }
      case "object":
        return objectArbitrary(schema, depth);
      default:
        throw new Error(`schema type ${type} is not supported by the generator`);
    }
  };

  const objectArbitrary = (schema: Record<string, any>, depth: number): fc.Arbitrary<unknown> => {
    const properties: Record<string, Schema> = schema.properties ?? {};
    const required = new Set<string>(schema.required ?? []);
    const keys = Object.keys(properties).filter((k) => required.has(k) || depth < DEEP);
    const record = fc.record(Object.fromEntries(keys.map((k) => [k, build(properties[k]!, depth + 1)])), {
      requiredKeys: keys.filter((k) => required.has(k)),
    });
    const extra = schema.additionalProperties;
    // Extra keys only for maps (no declared properties): a closed or open object gets the declared ones.
    if (Object.keys(properties).length > 0 || extra === false || extra === undefined || depth >= DEEP) return record;
    const keyArbitrary = schema.propertyNames ? (build(schema.propertyNames, depth + 1) as fc.Arbitrary<string>) : fc.string({ minLength: 1, maxLength: 12 });
    const maxKeys = Math.min(schema.maxProperties ?? FEW, FEW);
    return fc.dictionary(keyArbitrary, build(extra, depth + 1), { minKeys: schema.minProperties ?? 0, maxKeys });
  };

  return build(schema, 0);
}

function integerBounds(schema: Record<string, any>): { min: number; max: number } {
  const min = schema.exclusiveMinimum !== undefined ? Math.floor(schema.exclusiveMinimum) + 1 : schema.minimum ?? Number.MIN_SAFE_INTEGER;
  const max = schema.exclusiveMaximum !== undefined ? Math.ceil(schema.exclusiveMaximum) - 1 : schema.maximum ?? Number.MAX_SAFE_INTEGER;
  return { min: Math.ceil(min), max: Math.floor(max) };
}

function stringArbitrary(schema: Record<string, any>): fc.Arbitrary<string> {
  const minLength: number = schema.minLength ?? 0;
  const maxLength: number = schema.maxLength ?? Math.max(minLength, 40);
  const fits = (s: string) => [...s].length >= minLength && [...s].length <= maxLength;
  switch (schema.format) {
    case "date-time":
      return fc
        .date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true })
        .map((d) => d.toISOString());
    case "uri":
      return fc.webUrl().filter((s) => fits(s) && (!schema.pattern || new RegExp(schema.pattern, "u").test(s)));
    case "email":
      return fc.emailAddress().filter(fits);
    case "uuid":
      return fc.uuid();
    case undefined:
      break;
    default:
      throw new Error(`string format ${schema.format} is not supported by the generator`);
  }
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern, "u"), { size: "small" }).filter(fits);
  return fc.string({ unit: "grapheme-composite", minLength, maxLength: Math.min(maxLength, minLength + 24) }).filter(fits);
}

/** allOf (and a oneOf branch with its parent's own keywords) as one schema: properties and required joined. */
function mergeAll(base: Record<string, any>, parts: Array<Record<string, any>>): Record<string, any> {
  const { allOf: _allOf, ...merged } = base;
  for (const part of parts) {
    for (const [key, value] of Object.entries(part)) {
      if (key === "properties") merged.properties = { ...merged.properties, ...value };
      else if (key === "required") merged.required = [...new Set([...(merged.required ?? []), ...value])];
      else merged[key] = value;
    }
  }
  return merged;
}
