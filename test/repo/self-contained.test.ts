// The repository explains itself: no tracked text points at files outside it (sibling folders,
// design notes kept elsewhere, issue numbers of a tracker a clone does not have) or speaks of the
// work that produced it, every relative link in a Markdown file resolves, the decision records
// are numbered and indexed, and no kubeconfig sits at the root. Upstream facts name their public
// source (a URL) instead.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Tracked files as git lists them (git is required, as for every other test that runs the CLI). */
function trackedFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  return out.split("\0").filter((path) => path !== "");
}

/** Lockfiles list third-party package names and URLs, not berth's words. */
const SKIPPED = [/(^|\/)package-lock\.json$/, /(^|\/)node_modules\//];

const RULES: ReadonlyArray<{ rule: string; pattern: RegExp }> = [
  { rule: "a path into a sibling folder", pattern: /\.\.\/shared\b/ },
  { rule: "an absolute path of the machine the text was written on", pattern: /\/work\/(shared|briefs|wt|main)\b/ },
  { rule: "a design document outside the repository (use docs/design.md §n)", pattern: /\bDESIGN(\.md\b| §|'s\b| reference\b)/ },
  { rule: "an issue number of an outside tracker (say what the thing is)", pattern: /\bissue #\d/i },
  { rule: "notes kept outside the repository (state the fact)", pattern: /\bSTACK gotcha\b|\bSTYLE rule\b/ },
  { rule: "notes kept outside the repository (name the public source)", pattern: /\breference\/(vllm|sglang-and-routers|dynamo|gpustack-operator)\.md\b|\b(vllm|sglang-and-routers|dynamo|gpustack-operator)\.md §/ },
  {
    rule: "the work that wrote the text (write the fact, with a date if it can age)",
    pattern: /\b(this|previous|earlier|last|next|another|other|that) (work )?sessions?\b|\bsessions'|\ba session's\b|\bcatalogue's session\b|\bre-verified in\b|\bsubagents?\b/i,
  },
];

export interface OutwardReference {
  line: number;
  rule: string;
  text: string;
}

export function outwardReferences(text: string): OutwardReference[] {
  const found: OutwardReference[] = [];
  text.split("\n").forEach((line, index) => {
    for (const { rule, pattern } of RULES) {
      const match = pattern.exec(line);
      if (match) found.push({ line: index + 1, rule, text: match[0] });
    }
  });
  return found;
}

function readText(path: string): string | undefined {
  const full = join(ROOT, path);
  if (!existsSync(full) || !statSync(full).isFile() || statSync(full).size > 8 * 1024 * 1024) return undefined;
  const buffer = readFileSync(full);
  if (buffer.includes(0)) return undefined; // binary (images)
  return buffer.toString("utf8");
}

function violationsIn(paths: readonly string[]): string[] {
  const lines: string[] = [];
  for (const path of paths) {
    const text = readText(path);
    if (text === undefined) continue;
    for (const hit of outwardReferences(text)) lines.push(`${path}:${hit.line}: ${hit.rule}: "${hit.text}"`);
  }
  return lines;
}

const files = trackedFiles().filter((path) => !SKIPPED.some((skip) => skip.test(path)));

// The samples are joined from pieces so that this file itself passes its own check.
const DOTS = "..";
const D = "DESIGN";

describe("outwardReferences", () => {
  it.each([
    [`see the design in \`${DOTS}/shared/${D}.md\``, 2],
    [`// Retirement (${D} §7), the pure half`, 1],
    [`the defaults of ${D}'s retirement`, 1],
    [`correction factors (${D} reference dynamo` + `.md §3.3)`, 2],
    ["// The autoscaler loop (issue" + " #5): one loop", 1],
    ["(PGlite creation is slow, STACK" + " gotcha 3)", 1],
    ["(STYLE" + " rule 1)", 1],
    ["the metrics (reference/" + "vllm" + ".md §3)", 1],
    ["a copy in /work" + "/shared/reference", 1],
    ["parameters 8.8B, not re-" + "verified in " + "this" + " session", 1],
    ["intermediate versions " + "this" + " session, which", 1],
    ["other " + "sessions" + "' test suites took", 1],
  ])("finds %j", (line, hits) => {
    expect(outwardReferences(line)).toHaveLength(hits);
  });

  it.each([
    "policy: round_robin | least_load | cache_aware | session_affinity",
    "requests carrying the same session key (`x-session-id`, else `user`)",
    "an endpoint that drains or leaves moves only its own sessions",
    "export function openSession(values: CommonValues): Session {",
    "import { Session } from \"node:inspector/promises\";",
    "no lasting session to listen on (Neon): callers poll instead",
    "the user's login session (src/cli/user/session.ts)",
    "see docs/design.md §7.3 and docs/decisions/0033-sla-sizes-on-the-arrival-rate.md",
    "the planner's design, and an issue tracker's #5 label",
    "vLLM `vllm/v1/metrics/loggers.py` (https://github.com/vllm-project/vllm)",
    "the trigger is late by design",
  ])("leaves %j alone", (line) => {
    expect(outwardReferences(line)).toEqual([]);
  });
});

describe("the repository is self-contained", () => {
  it("lists its tracked files", () => {
    expect(files).toContain("docs/design.md");
    expect(files).toContain("src/domain/model-catalog.ts");
  });

  it("no tracked file points outside the repository or at the work that wrote it", () => {
    expect(violationsIn(files)).toEqual([]);
  });

  it("every relative link in a Markdown file resolves", () => {
    const broken: string[] = [];
    for (const path of files.filter((p) => p.endsWith(".md"))) {
      const text = readText(path) ?? "";
      text.split("\n").forEach((line, index) => {
        for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
          if (/^[a-z][a-z0-9+.-]*:/i.test(target!) || target!.startsWith("#")) continue;
          const file = normalize(join(dirname(path), target!.split("#")[0]!));
          if (!existsSync(join(ROOT, file))) broken.push(`${path}:${index + 1}: ${target}`);
        }
      });
    }
    expect(broken).toEqual([]);
  });

  it("decision records are numbered NNNN-kebab-title.md, each with Context, Decision and Consequences, each in the index", () => {
    const records = files.filter((p) => p.startsWith("docs/decisions/") && p !== "docs/decisions/README.md");
    expect(records.length).toBeGreaterThan(0);
    const index = readText("docs/decisions/README.md") ?? "";
    const problems: string[] = [];
    const numbers = new Set<string>();
    for (const path of records) {
      const name = path.slice("docs/decisions/".length);
      const match = /^(\d{4})-[a-z0-9]+(-[a-z0-9]+)*\.md$/.exec(name);
      if (!match) {
        problems.push(`${path}: name is not NNNN-kebab-title.md`);
        continue;
      }
      if (numbers.has(match[1]!)) problems.push(`${path}: number ${match[1]} used twice`);
      numbers.add(match[1]!);
      const text = readText(path) ?? "";
      for (const section of ["## Context", "## Decision", "## Consequences"]) {
        if (!text.split("\n").includes(section)) problems.push(`${path}: no "${section}" section`);
      }
      if (!index.includes(`](${name})`)) problems.push(`${path}: not in docs/decisions/README.md`);
    }
    expect(problems).toEqual([]);
  });

  it("no kubeconfig is tracked at the root", () => {
    const kubeconfigs = files.filter((path) => !path.includes("/") && /^kind:\s*Config\s*$/m.test(readText(path) ?? ""));
    expect(kubeconfigs).toEqual([]);
  });
});
