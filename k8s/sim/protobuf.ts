// Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) → the JSON objects
// the registry stores. The wire form is `k8s\0` then a runtime.Unknown whose `raw` is the object
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#protobuf-encoding); the messages
// come from protobuf-schema.json (generate-protobuf-schema.ts). Go writes fields it holds by
// value even when zero, so those are dropped when zero, as `omitempty` does in Go's JSON; fields
// Go holds by pointer are kept as sent (`replicas: 0` stays).
import { readFileSync } from "node:fs";
import protobuf from "protobufjs/light.js";
import { ApiError, errors } from "./objects.ts";

export const PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf";
/** The field option the schema marks by-value (non-pointer) Go fields with. */
export const NULLABLE_OPTION = "(gogoproto.nullable)";
/** The field option the schema marks Go's embedded structs with: their fields appear in the parent's JSON. */
export const INLINE_OPTION = "inline";

const MAGIC = Buffer.from("k8s\0", "latin1");
const META = "k8s.io.apimachinery.pkg.apis.meta.v1";

/** `apps/v1` + `Deployment` → `k8s.io.api.apps.v1.Deployment`; `meta.k8s.io/v1` is apimachinery's. */
export function protoTypeName(apiVersion: string, kind: string): string {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["", apiVersion];
  if (group === "meta.k8s.io") return `${META}.${kind}`;
  return `k8s.io.api.${group ? group!.split(".")[0] : "core"}.${version}.${kind}`;
}

let schema: { root: protobuf.Root; envelope: protobuf.Type } | undefined;
function loadSchema() {
  if (!schema) {
    const json = JSON.parse(readFileSync(new URL("./protobuf-schema.json", import.meta.url), "utf8")) as { nested: protobuf.INamespace["nested"] };
    const root = protobuf.Root.fromJSON({ nested: json.nested });
    schema = { root, envelope: root.lookupType("k8s.io.apimachinery.pkg.runtime.Unknown") };
  }
  return schema;
}

type Plain = Record<string, unknown>;

const rfc3339 = (seconds: number) => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

/** Messages whose JSON form is not an object of their fields; `undefined` is Go's zero (omitted). */
const JSON_FORMS: Record<string, (message: Plain) => unknown> = {
  [`${META}.Time`]: (m) => (m.seconds || m.nanos ? rfc3339(Number(m.seconds ?? 0)) : undefined),
  [`${META}.MicroTime`]: (m) =>
    m.seconds || m.nanos ? rfc3339(Number(m.seconds ?? 0)).replace("Z", `.${String(Math.floor(Number(m.nanos ?? 0) / 1000)).padStart(6, "0")}Z`) : undefined,
  [`${META}.FieldsV1`]: (m) => (m.Raw ? JSON.parse(Buffer.from(m.Raw as string, "base64").toString("utf8")) : undefined),
  "k8s.io.apimachinery.pkg.runtime.RawExtension": (m) => (m.raw ? JSON.parse(Buffer.from(m.raw as string, "base64").toString("utf8")) : undefined),
  "k8s.io.apimachinery.pkg.api.resource.Quantity": (m) => (m.string ? m.string : undefined),
  // type 0 is an int (0 included), 1 a string; the zero value (int 0) reads as unset, as the API server's defaulting treats it.
  "k8s.io.apimachinery.pkg.util.intstr.IntOrString": (m) => (Number(m.type ?? 0) === 1 ? (m.strVal ?? "") : m.intVal ? m.intVal : undefined),
};

const isZero = (value: unknown) => value === "" || value === 0 || value === false;

function jsonOf(type: protobuf.Type, message: Plain): unknown {
  const form = JSON_FORMS[type.fullName.replace(/^\./, "")];
  if (form) return form(message);
  const out: Plain = {};
  for (const field of type.fieldsArray) {
    const value = message[field.name];
    if (value === undefined || value === null) continue;
    const convert = (v: unknown) => (field.resolvedType instanceof protobuf.Type ? jsonOf(field.resolvedType, v as Plain) : v);
    let json: unknown;
    if (field instanceof protobuf.MapField) {
      const entries = Object.entries(value as Plain).map(([k, v]) => [k, convert(v)] as const);
      if (entries.length === 0) continue;
      json = Object.fromEntries(entries);
    } else if (field.repeated) {
      if ((value as unknown[]).length === 0) continue;
      json = (value as unknown[]).map(convert);
    } else json = convert(value);
    if (json === undefined) continue;
    if (field.getOption(NULLABLE_OPTION) === false && isZero(json)) continue;
    if (field.getOption(INLINE_OPTION) === true) Object.assign(out, json);
    else out[field.name] = json;
  }
  return out;
}

const undecodable = (why: string) => errors.badRequest(`the body of the request could not be decoded as ${PROTOBUF_CONTENT_TYPE}: ${why}`);

/** A protobuf request body as the JSON object (apiVersion and kind first) a JSON client would have sent. */
export function decodeProtobufBody(body: Uint8Array): Record<string, unknown> {
  if (body.length === 0) throw errors.badRequest("the request body is empty");
  if (body.length < MAGIC.length || !MAGIC.equals(body.subarray(0, MAGIC.length))) throw undecodable('it does not start with the "k8s\\0" prefix');
  const { root, envelope } = loadSchema();
  let unknown: Plain;
  try {
    unknown = envelope.toObject(envelope.decode(body.subarray(MAGIC.length)), { longs: Number });
  } catch (error) {
    throw undecodable(`the runtime.Unknown envelope is malformed (${(error as Error).message})`);
  }
  const { apiVersion = "", kind = "" } = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  if (!kind) throw undecodable("the envelope names no kind (typeMeta.kind is empty)");
  if (unknown.contentEncoding) {
    throw new ApiError(415, "UnsupportedMediaType", `${kind} body: contentEncoding "${String(unknown.contentEncoding)}" is not supported; send the object unencoded or as application/json`);
  }
  const type = root.lookup(protoTypeName(apiVersion, kind));
  if (!(type instanceof protobuf.Type)) {
    throw new ApiError(
      415,
      "UnsupportedMediaType",
      `the simulated cluster cannot decode ${kind} (${apiVersion || "no apiVersion"}) from ${PROTOBUF_CONTENT_TYPE}; send it as application/json instead, e.g. \`kubectl create ... --dry-run=client -o json | kubectl apply -f -\``,
    );
  }
  let object: unknown;
  try {
    const raw = (unknown.raw as Uint8Array | undefined) ?? new Uint8Array();
    object = jsonOf(type, type.toObject(type.decode(raw), { longs: Number, bytes: String }));
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw undecodable(`${kind} is malformed (${(error as Error).message})`);
  }
  return { apiVersion, kind, ...(object as Plain) };
}
