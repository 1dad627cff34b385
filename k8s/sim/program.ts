// What a simulated container runs (pure). The process kubelet has no images: it maps a
// container's image and argv onto programs on this machine.
//   vllm/*, lmsysorg/sglang*   the engine simulator, given the engine's own argv after `--`;
//                              the argv is found directly (`vllm serve …`, `python3 -m
//                              sglang.launch_server …`), inside a shell wrapper's arguments
//                              (the elastic leader's `sh -c 'ray start … && exec "$@"' _ vllm
//                              serve …`) or inside its script; `ray start` alone (a Ray worker
//                              rank) runs as an idle process; any other command runs as given
//                              on the host (so a take-over command that is not installed
//                              fails, and crash-loops, as it would in a container).
//   the router image           `berth router` with the container's args.
//   anything else              no program: the image cannot be pulled (ErrImagePull), external
//                              routers (vllm/vllm-router, smg) included.
//   Programs.noProcessImages   no process at all: Running, started and Ready at once (scale
//                              tests with thousands of pods; checked before everything above).
// Also Kubernetes' `$(VAR)` expansion and the container environment (value, fieldRef,
// secretKeyRef, configMapKeyRef, envFrom), as the real kubelet builds them.

export interface Programs {
  /** Argv prefix of the engine simulator; the engine argv follows after `--` (e.g. node bin/berth.js sim-engine). */
  engineCommand: string[];
  /** Argv prefix of the built-in router (e.g. node bin/berth.js router); the container's args follow. */
  routerCommand: string[];
  /** Image whose containers run the router. */
  routerImage: string;
  /** Argv prefix of the berth CLI (e.g. node bin/berth.js): `berth <command>` in the berth image runs it, `berth agent` included. */
  berthCommand?: string[];
  /**
   * Images whose containers start no process: the kubelet reports them Running, started and
   * Ready at once (no probes, no preStop, no logs) until the pod is deleted. For scale tests
   * (bench/agent.ts: 2,000 pods on one machine); absent, every image behaves as above.
   */
  noProcessImages?: string[];
}

export type ImageClass = "engine" | "router" | "unknown";

export type ContainerProgram =
  | { kind: "engine"; argv: string[]; engineArgv: string[] }
  | { kind: "router"; argv: string[] }
  | { kind: "idle"; argv: string[] }
  | { kind: "host"; argv: string[] }
  | { kind: "no-process" }
  | { kind: "unknown-image" };

/** `docker.io/library/x`, `docker.io/x` and `x` name the same image. */
export function normalizeImage(image: string): string {
  return image.replace(/^docker\.io\/library\//, "").replace(/^docker\.io\//, "").replace(/^index\.docker\.io\//, "");
}

/** Whether containers of this image run no process (`Programs.noProcessImages`). */
export function runsNoProcess(image: string, programs: Programs): boolean {
  const normalized = normalizeImage(image);
  return (programs.noProcessImages ?? []).some((candidate) => normalizeImage(candidate) === normalized);
}

export function classifyImage(image: string, routerImage: string): ImageClass {
  const normalized = normalizeImage(image);
  if (normalized === normalizeImage(routerImage)) return "router";
  // vllm-router lives under vllm/ too, but no external router is simulated.
  if (normalized.startsWith("vllm/vllm-router")) return "unknown";
  if (normalized.startsWith("vllm/") || normalized.startsWith("lmsysorg/sglang")) return "engine";
  return "unknown";
}

/**
 * Kubernetes' `$(VAR)` expansion: a defined variable is replaced, an undefined reference stays
 * as written, `$$` is a literal `$` (so `$$(VAR)` stays `$(VAR)`).
 */
export function expandReferences(input: string, lookup: (name: string) => string | undefined): string {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const ch = input[i]!;
    if (ch === "$" && i + 1 < input.length) {
      const next = input[i + 1]!;
      if (next === "$") {
        out += "$";
        i++;
        continue;
      }
      if (next === "(") {
        const close = input.indexOf(")", i + 2);
        if (close > 0) {
          const name = input.slice(i + 2, close);
          const value = lookup(name);
          out += value ?? input.slice(i, close + 1);
          i = close;
          continue;
        }
      }
    }
    out += ch;
  }
  return out;
}

const SHELLS = new Set(["sh", "bash", "dash", "ash", "zsh"]);
const basename = (path: string) => path.slice(path.lastIndexOf("/") + 1);
const OPERATORS = new Set(["&&", "||", ";", "|", "&"]);

/**
 * Words of a shell script, enough to find a command line in it: quotes, backslashes, `$VAR`
 * and `${VAR}` (from `env`), and `&&`, `||`, `;`, `|`, `&` as separate words.
 */
export function shellWords(script: string, env: (name: string) => string | undefined): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  const flush = () => {
    if (inWord) words.push(word);
    word = "";
    inWord = false;
  };
  const variable = (i: number): [string, number] => {
    if (script[i + 1] === "{") {
      const close = script.indexOf("}", i + 2);
      if (close > 0) return [env(script.slice(i + 2, close)) ?? "", close];
    }
    const match = /^[A-Za-z_][A-Za-z0-9_]*/.exec(script.slice(i + 1));
    if (match) return [env(match[0]) ?? "", i + match[0].length];
    return ["$", i];
  };
  for (let i = 0; i < script.length; i++) {
    const ch = script[i]!;
    if (ch === "'") {
      const close = script.indexOf("'", i + 1);
      word += script.slice(i + 1, close < 0 ? script.length : close);
      inWord = true;
      i = close < 0 ? script.length : close;
    } else if (ch === '"') {
      inWord = true;
      for (i++; i < script.length && script[i] !== '"'; i++) {
        if (script[i] === "\\" && i + 1 < script.length) word += script[++i];
        else if (script[i] === "$") {
          const [value, end] = variable(i);
          word += value;
          i = end;
        } else word += script[i];
      }
    } else if (ch === "\\" && i + 1 < script.length) {
      word += script[++i];
      inWord = true;
    } else if (ch === "$") {
      const [value, end] = variable(i);
      word += value;
      inWord = true;
      i = end;
    } else if (/\s/.test(ch)) flush();
    else if ("&|;".includes(ch)) {
      flush();
      const pair = script.slice(i, i + 2);
      words.push(pair === "&&" || pair === "||" ? pair : ch);
      if (pair === "&&" || pair === "||") i++;
    } else {
      word += ch;
      inWord = true;
    }
  }
  flush();
  return words;
}

function isPython(token: string | undefined): boolean {
  return token !== undefined && /^python(3(\.\d+)?)?$/.test(basename(token));
}

const ENGINE_MODULES = new Set(["sglang.launch_server", "vllm.entrypoints.openai.api_server"]);

/** Index where an engine command line starts in `words`, or -1. */
function engineStart(words: readonly string[]): number {
  return words.findIndex(
    (word, i) => (basename(word) === "vllm" && words[i + 1] === "serve") || (isPython(word) && words[i + 1] === "-m" && ENGINE_MODULES.has(words[i + 2] ?? "")),
  );
}

const rayStart = (words: readonly string[]) => words.some((word, i) => basename(word) === "ray" && words[i + 1] === "start");

/** The engine argv in a container's (expanded) argv, searching a shell wrapper's script too. */
export function findEngineArgv(argv: readonly string[], env: (name: string) => string | undefined = () => undefined): string[] | undefined {
  const direct = engineStart(argv);
  if (direct >= 0) return argv.slice(direct);
  if (SHELLS.has(basename(argv[0] ?? "")) && argv[1] === "-c" && argv[2] !== undefined) {
    const words = shellWords(argv[2], env);
    const start = engineStart(words);
    if (start >= 0) {
      const end = words.findIndex((word, i) => i > start && OPERATORS.has(word));
      return words.slice(start, end < 0 ? undefined : end);
    }
  }
  return undefined;
}

/** What a Ray worker rank (`ray start … --block`) runs: a process that waits to be stopped. */
export const IDLE_SCRIPT = [
  "const argv = process.argv.slice(1).join(' ');",
  "console.log(`berth-sim: simulating \\`${argv}\\` (no Ray here): idle until stopped`);",
  "process.on('SIGTERM', () => { console.log('berth-sim: SIGTERM, exiting'); process.exit(0); });",
  "setInterval(() => {}, 1 << 30);",
].join("\n");

export interface ResolveInput {
  image: string;
  /** Command and args, already `$(VAR)`-expanded. */
  command: string[];
  args: string[];
  env: ReadonlyMap<string, string>;
  programs: Programs;
  /** Flags put before `--` for the engine simulator (e.g. the node's `--gpu-type`). */
  engineFlags?: string[];
  /** The node binary for idle processes. */
  nodePath: string;
}

export function resolveProgram(input: ResolveInput): ContainerProgram {
  if (runsNoProcess(input.image, input.programs)) return { kind: "no-process" };
  const kind = classifyImage(input.image, input.programs.routerImage);
  if (kind === "unknown") return { kind: "unknown-image" };
  const argv = [...input.command, ...input.args];
  if (kind === "router") {
    const berthRouter = argv.length >= 2 && basename(argv[0]!) === "berth" && argv[1] === "router";
    if (argv.length === 0 || berthRouter || input.command.length === 0) {
      return { kind: "router", argv: [...input.programs.routerCommand, ...(berthRouter ? argv.slice(2) : input.args)] };
    }
    // The image's other commands (`berth agent …`): the berth CLI of this checkout.
    if (basename(argv[0]!) === "berth" && input.programs.berthCommand) return { kind: "host", argv: [...input.programs.berthCommand, ...argv.slice(1)] };
    return { kind: "host", argv };
  }
  // The vLLM image's entrypoint is its OpenAI server: bare args are its flags.
  const withEntrypoint =
    input.command.length === 0 && normalizeImage(input.image).startsWith("vllm/") && engineStart(argv) < 0
      ? ["python3", "-m", "vllm.entrypoints.openai.api_server", ...argv]
      : argv;
  const engineArgv = findEngineArgv(withEntrypoint, (name) => input.env.get(name));
  if (engineArgv) {
    const prefix = input.programs.engineCommand;
    const own = prefix[prefix.length - 1] === "--" ? prefix.slice(0, -1) : prefix;
    return { kind: "engine", argv: [...own, ...(input.engineFlags ?? []), "--", ...engineArgv], engineArgv };
  }
  const script = SHELLS.has(basename(withEntrypoint[0] ?? "")) && withEntrypoint[1] === "-c" ? shellWords(withEntrypoint[2] ?? "", (n) => input.env.get(n)) : [];
  if (rayStart(withEntrypoint) || rayStart(script)) return { kind: "idle", argv: [input.nodePath, "-e", IDLE_SCRIPT, ...withEntrypoint] };
  if (withEntrypoint.length === 0) return { kind: "host", argv: [] };
  return { kind: "host", argv: withEntrypoint };
}

// ---------------------------------------------------------------------------------------------
// The container environment

export interface EnvSource {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    resourceFieldRef?: { resource: string; containerName?: string; divisor?: string };
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
  };
}

export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}

export interface EnvContext {
  /** `metadata.name`, `status.podIP`, `metadata.labels['x']`… of the pod. */
  field(path: string): string | undefined;
  /** A container's resource value (`limits.cpu`, `requests.memory`…). */
  resource(resource: string): string | undefined;
  /** Decoded Secret data (undefined: no such Secret). */
  secret(name: string): Record<string, string> | undefined;
  configMap(name: string): Record<string, string> | undefined;
}

export class EnvError extends Error {}

/** The container's variables in order: envFrom first, then env (each value expanding the ones before it). */
export function resolveEnv(env: readonly EnvSource[] | undefined, envFrom: readonly EnvFromSource[] | undefined, ctx: EnvContext): Map<string, string> {
  const out = new Map<string, string>();
  for (const source of envFrom ?? []) {
    const ref = source.configMapRef ?? source.secretRef;
    if (!ref) continue;
    const kind = source.configMapRef ? "configmap" : "secret";
    const data = source.configMapRef ? ctx.configMap(ref.name) : ctx.secret(ref.name);
    if (!data) {
      if (ref.optional) continue;
      throw new EnvError(`${kind} "${ref.name}" not found`);
    }
    for (const [key, value] of Object.entries(data)) out.set(`${source.prefix ?? ""}${key}`, value);
  }
  for (const variable of env ?? []) {
    const from = variable.valueFrom;
    let value: string | undefined;
    if (!from) value = expandReferences(variable.value ?? "", (name) => out.get(name));
    else if (from.fieldRef) {
      value = ctx.field(from.fieldRef.fieldPath);
      if (value === undefined) throw new EnvError(`unsupported fieldRef ${from.fieldRef.fieldPath}`);
    } else if (from.resourceFieldRef) value = ctx.resource(from.resourceFieldRef.resource) ?? "0";
    else if (from.secretKeyRef || from.configMapKeyRef) {
      const ref = (from.secretKeyRef ?? from.configMapKeyRef)!;
      const kind = from.secretKeyRef ? "secret" : "configmap";
      const data = from.secretKeyRef ? ctx.secret(ref.name) : ctx.configMap(ref.name);
      if (!data) {
        if (ref.optional) continue;
        throw new EnvError(`${kind} "${ref.name}" not found`);
      }
      value = data[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        throw new EnvError(`couldn't find key ${ref.key} in ${from.secretKeyRef ? "Secret" : "ConfigMap"} ${ref.name}`);
      }
    }
    out.set(variable.name, value ?? "");
  }
  return out;
}

/**
 * Rewrites argv words and env values that point into a mounted volume (`/etc/berth/router-admin/token`)
 * to where the kubelet wrote that volume on this machine. `mounts` maps mountPath → host directory.
 */
export function rewriteMountedPaths(value: string, mounts: ReadonlyMap<string, string>): string {
  const sorted = [...mounts].sort((a, b) => b[0].length - a[0].length);
  const rewrite = (path: string) => {
    for (const [mountPath, host] of sorted) {
      const base = mountPath.replace(/\/+$/, "");
      if (path === base || path.startsWith(`${base}/`)) return host + path.slice(base.length);
    }
    return path;
  };
  const eq = value.indexOf("=");
  if (value.startsWith("-") && eq > 0) return value.slice(0, eq + 1) + rewrite(value.slice(eq + 1));
  return rewrite(value);
}
