// Appending a role's extraArgs/env to what berth rendered, so that no flag and no variable
// appears twice. Admission refuses owned keys already; this is the renderer's own guarantee
// (a spec stored before a rule existed, or written around admission, still renders sanely).
// Rules: a flag berth owns, or one berth rendered for this pod, is dropped from extraArgs
// together with its value(s) — berth's value wins. An env name berth owns is dropped from
// `env`; a default berth merely suggests (e.g. VLLM_ELASTIC_EP_DRAIN_REQUESTS) yields to the user.
import type { V1EnvVar } from "@kubernetes/client-node";
import type { EngineName } from "../../src/domain/deployment-spec.ts";
import { findOwnedEnv, findOwnedFlag } from "../../src/domain/owned-flags.ts";

/** Flags that take several values (argparse nargs="+"): every following non-flag token is theirs. */
const MULTI_VALUE = new Set(["--served-model-name", "--encoder-urls", "--api-key"]);

/** Owned flags that take no value, for dropping a user's copy without eating the next token. */
const OWNED_BOOLEAN = new Set([
  "--headless",
  "--enable-expert-parallel",
  "--enable-eplb",
  "--enable-elastic-ep",
  "--data-parallel-hybrid-lb",
  "--data-parallel-external-lb",
  "--data-parallel-multi-port-external-lb",
  "--enable-metrics",
]);

export function isFlagToken(token: string): boolean {
  return token.startsWith("-") && token !== "-" && token !== "--" && !/^-\d/.test(token);
}

/** `--Flag_name.sub=x` → `--flag-name`; short flags stay as they are. */
function normalizeFlag(token: string): string {
  const name = token.split("=", 1)[0]!;
  if (!name.startsWith("--")) return name;
  let base = name.slice(2).split(".", 1)[0]!.replaceAll("_", "-");
  if (base.startsWith("no-")) base = base.slice(3);
  return `--${base}`;
}

interface EmittedFlag {
  takesValue: boolean;
}

/** The flags of a berth-rendered argv (a flag followed by a non-flag token takes a value). */
function emittedFlags(engine: EngineName, argv: readonly string[]): Map<string, EmittedFlag> {
  const flags = new Map<string, EmittedFlag>();
  argv.forEach((token, i) => {
    if (!isFlagToken(token)) return;
    const canonical = findOwnedFlag(engine, token)?.flag ?? normalizeFlag(token);
    const next = argv[i + 1];
    flags.set(canonical, { takesValue: token.includes("=") || (next !== undefined && !isFlagToken(next)) });
  });
  return flags;
}

export interface MergedArgs {
  args: string[];
  /** The extraArgs tokens left out, for logs and events. */
  dropped: string[];
}

/** berth's argv followed by the role's extraArgs minus every flag berth owns or already set. */
export function appendExtraArgs(engine: EngineName, rendered: readonly string[], extraArgs: readonly string[]): MergedArgs {
  const emitted = emittedFlags(engine, rendered);
  const kept: string[] = [];
  const dropped: string[] = [];
  for (let i = 0; i < extraArgs.length; i++) {
    const token = extraArgs[i]!;
    if (!isFlagToken(token)) {
      kept.push(token);
      continue;
    }
    const owned = findOwnedFlag(engine, token);
    const canonical = owned?.flag ?? normalizeFlag(token);
    const mine = emitted.get(canonical);
    if (!owned && !mine) {
      kept.push(token);
      continue;
    }
    dropped.push(token);
    const inline = token.includes("=");
    const negated = token.startsWith("--no-") || token.startsWith("--no_");
    const takesValue = mine ? mine.takesValue : !OWNED_BOOLEAN.has(canonical);
    if (inline || negated || !takesValue) continue;
    // Its value(s): one token, or all following non-flag tokens for nargs="+".
    while (i + 1 < extraArgs.length && !isFlagToken(extraArgs[i + 1]!)) {
      dropped.push(extraArgs[++i]!);
      if (!MULTI_VALUE.has(canonical)) break;
    }
  }
  return { args: [...rendered, ...kept], dropped };
}

/**
 * berth's variables, then the role's. A user variable is left out when berth set the same
 * name, or when the engine's table owns the name (under a take-over command only BERTH_*
 * stays reserved: the user runs the engine and may set its variables). A berth default is
 * replaced by the user's variable of the same name. Each name appears once.
 */
export function mergeEnv(
  engine: EngineName,
  owned: readonly V1EnvVar[],
  defaults: readonly V1EnvVar[],
  user: readonly Pick<V1EnvVar, "name" | "value" | "valueFrom">[],
  options: { takeOver: boolean },
): V1EnvVar[] {
  const ownedNames = new Set(owned.map((e) => e.name));
  const accepted = user.filter(
    (e) =>
      !ownedNames.has(e.name) &&
      (options.takeOver ? !e.name.startsWith("BERTH_") : findOwnedEnv(engine, e.name) === undefined),
  );
  const userNames = new Set(accepted.map((e) => e.name));
  const out: V1EnvVar[] = [...owned, ...defaults.filter((e) => !userNames.has(e.name) && !ownedNames.has(e.name))];
  const seen = new Set(out.map((e) => e.name));
  for (const e of accepted) {
    if (seen.has(e.name)) continue; // a user list naming a variable twice keeps its first value
    seen.add(e.name);
    // A Secret reference goes to the pod as written: the kubelet reads the Secret, berth never does.
    out.push(e.valueFrom ? { name: e.name, valueFrom: e.valueFrom } : { name: e.name, value: e.value });
  }
  return out;
}
