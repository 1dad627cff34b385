// Writes protobuf-schema.json, the message schema the simulated API server decodes kubectl's
// protobuf bodies with. The schema comes from the kubectl binary on PATH (or argv[2]): Go
// programs built from k8s.io/api carry each generated.proto as a gzipped FileDescriptorProto,
// so the field numbers are exactly those of the kubectl that sends the bytes. Only the messages
// reachable from the kinds the simulator serves are kept; each field records whether Go holds
// it by value (`(gogoproto.nullable) = false`), which decides how a zero value reads in JSON.
// Run: npm run sim:protobuf-schema
import { execFileSync } from "node:child_process";
import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import * as k8s from "@kubernetes/client-node";
import protobuf from "protobufjs";
import descriptor from "protobufjs/ext/descriptor/index.js";
import { INLINE_OPTION, NULLABLE_OPTION, protoTypeName } from "./protobuf.ts";
import { groupVersion, RESOURCES } from "./resources.ts";

/** Bodies of subresources and verbs besides the stored kinds, and the envelope itself. */
const EXTRA_ROOTS = [
  ["autoscaling/v1", "Scale"],
  ["v1", "Binding"],
  ["policy/v1", "Eviction"],
  ["meta.k8s.io/v1", "DeleteOptions"],
  ["authentication.k8s.io/v1", "TokenRequest"],
] as const;
const ENVELOPE = "k8s.io.apimachinery.pkg.runtime.Unknown";
const GOGO_NULLABLE = 65001;

interface FieldProto {
  name: string;
  typeName?: string;
  options?: { gogoNullable?: boolean };
}
interface MessageProto {
  name: string;
  field: FieldProto[];
  nestedType: MessageProto[];
}
interface FileProto {
  name: string;
  package: string;
  dependency: string[];
  messageType: MessageProto[];
}

const kubectl = process.argv[2] ?? realpathSync(execFileSync("sh", ["-c", "command -v kubectl"], { encoding: "utf8" }).trim());
const version = execFileSync(kubectl, ["version", "--client", "-o", "json"], { encoding: "utf8" });
const gitVersion = (JSON.parse(version) as { clientVersion: { gitVersion: string } }).clientVersion.gitVersion;

// FieldOptions learns gogoproto's `nullable` so the decoded descriptors keep it.
const descriptorTypes = descriptor as unknown as Record<"FieldOptions" | "FileDescriptorProto", protobuf.Type>;
const FieldOptions = descriptorTypes.FieldOptions;
FieldOptions.add(new protobuf.Field("gogoNullable", GOGO_NULLABLE, "bool"));
const FileDescriptorProto = descriptorTypes.FileDescriptorProto;

/** Every gzipped FileDescriptorProto for k8s.io in the binary, by file name. */
function embeddedFiles(binary: Buffer): Map<string, FileProto> {
  const gzipHeader = Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0]);
  const files = new Map<string, FileProto>();
  for (let at = binary.indexOf(gzipHeader); at >= 0; at = binary.indexOf(gzipHeader, at + 1)) {
    let bytes: Buffer;
    try {
      bytes = gunzipSync(binary.subarray(at, at + 4 * 1024 * 1024), { finishFlush: 2 });
    } catch {
      continue;
    }
    // A FileDescriptorProto opens with field 1 (name): 0x0a, a length, then `k8s.io/`.
    if (bytes[0] !== 0x0a || !bytes.subarray(2, 9).equals(Buffer.from("k8s.io/"))) continue;
    const file = FileDescriptorProto.toObject(FileDescriptorProto.decode(bytes), { arrays: true }) as FileProto;
    files.set(file.name, file);
  }
  return files;
}

const files = embeddedFiles(readFileSync(kubectl));
if (files.size === 0) throw new Error(`${kubectl}: no embedded k8s.io descriptors found`);

const messages = new Map<string, { file: FileProto; message: MessageProto }>();
for (const file of files.values()) for (const message of file.messageType) messages.set(`${file.package}.${message.name}`, { file, message });

// Messages reachable from the roots (map entries are nested types and come with their parent).
const roots = [...RESOURCES.map((r) => [groupVersion(r), r.kind] as const), ...EXTRA_ROOTS].map(([apiVersion, kind]) => protoTypeName(apiVersion, kind));
const keep = new Set<string>();
const pending = [ENVELOPE, ...roots];
while (pending.length > 0) {
  let name = pending.pop()!;
  // A map entry (`ObjectMeta.LabelsEntry`) stands for its parent message.
  if (!messages.has(name) && messages.has(name.slice(0, name.lastIndexOf(".")))) name = name.slice(0, name.lastIndexOf("."));
  if (keep.has(name)) continue;
  const found = messages.get(name);
  if (!found) throw new Error(`${kubectl} (${gitVersion}) has no message ${name}`);
  keep.add(name);
  for (const message of [found.message, ...found.message.nestedType]) {
    for (const field of message.field) if (field.typeName) pending.push(field.typeName.replace(/^\./, ""));
  }
}

const kept = [...files.values()]
  .map((file) => ({ ...file, dependency: [], messageType: file.messageType.filter((m) => keep.has(`${file.package}.${m.name}`)) }))
  .filter((file) => file.messageType.length > 0)
  .sort((a, b) => a.name.localeCompare(b.name));
const root = (protobuf.Root as unknown as { fromDescriptor(set: unknown, options: { keepCase: boolean }): protobuf.Root }).fromDescriptor({ file: kept }, { keepCase: true });

// Go's embedded structs (`json:",inline"`) look like any by-value field in the descriptors; the
// JSON models of @kubernetes/client-node tell them apart: a message field with no JSON property
// of its name in its parent's model is inlined there.
type Model = { attributeTypeMap?: { baseName: string; type: string }[] };
const MODELS = k8s as unknown as Record<string, Model | undefined>;
// client-node prefixes the models whose kind two groups share with the group.
const QUALIFIED_MODELS: Record<string, string> = { "v1 Event": "CoreV1Event", "authentication.k8s.io/v1 TokenRequest": "AuthenticationV1TokenRequest" };
const modelName = (apiVersion: string, kind: string) => QUALIFIED_MODELS[`${apiVersion} ${kind}`] ?? `V1${kind}`;
const elementOf = (type: string) => /^Array<(.+)>$/.exec(type)?.[1] ?? /^\{ \[key: string\]: (.+); \}$/.exec(type)?.[1] ?? type;
const inline = new Set<string>();
const unmatched: string[] = [];
const walked = new Set<string>();
function walk(typeName: string, model: string): void {
  const key = `${typeName} ${model}`;
  const found = messages.get(typeName);
  if (walked.has(key) || !found || !MODELS[model]?.attributeTypeMap) return;
  walked.add(key);
  for (const field of found.message.field) {
    const child = field.typeName?.replace(/^\./, "");
    const property = MODELS[model]!.attributeTypeMap!.find((a) => a.baseName === field.name);
    if (property) {
      if (child) walk(child, elementOf(property.type));
    } else if (child && field.options?.gogoNullable === false) {
      inline.add(`${typeName}.${field.name}`);
      walk(child, model);
    } else unmatched.push(`${typeName}.${field.name}`);
  }
}
for (const [apiVersion, kind] of [...RESOURCES.map((r) => [groupVersion(r), r.kind] as const), ...EXTRA_ROOTS]) {
  const model = modelName(apiVersion, kind);
  if (!MODELS[model]) throw new Error(`@kubernetes/client-node has no model ${model}`);
  walk(protoTypeName(apiVersion, kind), model);
}

// fromDescriptor names the option after the field added above: keep `nullable` in its .proto spelling.
for (const file of kept) {
  for (const message of file.messageType) {
    const type = root.lookupType(`${file.package}.${message.name}`);
    for (const field of type.fieldsArray) {
      const { gogo_nullable: nullable, ...rest } = (field.options ?? {}) as Record<string, unknown>;
      field.options = Object.keys(rest).length > 0 ? rest : undefined;
      if (nullable === false) field.setOption(NULLABLE_OPTION, false);
      if (inline.has(`${file.package}.${message.name}.${field.name}`)) field.setOption(INLINE_OPTION, true);
    }
  }
}

const out = new URL("./protobuf-schema.json", import.meta.url);
const schema = { source: `kubectl ${gitVersion}`, nested: root.toJSON().nested };
writeFileSync(out, JSON.stringify(schema, null, 1) + "\n");
process.stdout.write(`${out.pathname}: ${keep.size} messages from ${kept.length} files of kubectl ${gitVersion}\ninlined: ${[...inline].join(", ")}\nwithout a JSON property: ${unmatched.join(", ") || "none"}\n`);
