// Reads the fenced blocks of a Markdown guide and turns its ```sh blocks into one bash script.
// The marking (documented at the top of docs/guides/README.md):
//   - every fence names its form: `sh` runs; `text`, `yaml`, `json` and `ts` never do; any
//     other fence (none, `bash`, `shell`, …) is an error, so no block is silently skipped;
//   - the sh blocks of a file run in order in one bash (`set -euo pipefail`), so variables carry;
//   - `# → TEXT` after a command: some line of the output of the commands since the previous
//     expectation (or the block's start) contains TEXT, where `…` stands for any characters and
//     a run of spaces for any run of blanks; `# expect: /REGEX/FLAGS` the same output matches REGEX.

export type Expectation = { kind: "text" | "regex"; source: string; pattern: RegExp; line: number };

export interface Step {
  /** The bash lines of this step, as written. */
  code: string;
  /** 1-based line of the step's first line in the Markdown file. */
  line: number;
  expectations: Expectation[];
}

export interface FencedBlock {
  form: string;
  line: number;
  body: string[];
}

export const RUN_FORM = "sh";
export const INERT_FORMS = ["text", "yaml", "json", "ts"] as const;

export class GuideFormatError extends Error {
  constructor(file: string, line: number, message: string) {
    super(`${file}:${line}: ${message}`);
  }
}

/** Every fenced block of a Markdown text; throws on a fence of unknown form or one left open. */
export function fencedBlocks(markdown: string, file: string): FencedBlock[] {
  const lines = markdown.split("\n");
  const blocks: FencedBlock[] = [];
  let open: { fence: string; indent: number; block: FencedBlock } | undefined;
  lines.forEach((text, index) => {
    const fence = /^(\s*)(`{3,}|~{3,})\s*(.*?)\s*$/.exec(text);
    if (open) {
      if (fence && fence[2]!.startsWith(open.fence) && fence[3] === "") {
        blocks.push(open.block);
        open = undefined;
      } else {
        open.block.body.push(text.slice(Math.min(open.indent, text.length - text.trimStart().length)));
      }
      return;
    }
    // CommonMark: the info string of a backtick fence holds no backtick (so "```` ```sh ````" in prose is no fence).
    if (!fence || (fence[2]!.startsWith("`") && fence[3]!.includes("`"))) return;
    const form = fence[3]!;
    if (form !== RUN_FORM && !(INERT_FORMS as readonly string[]).includes(form)) {
      throw new GuideFormatError(
        file,
        index + 1,
        `a fenced block must be \`\`\`${RUN_FORM} (it runs) or one of ${INERT_FORMS.map((f) => "```" + f).join(", ")} (it does not); got "${fence[2]}${form}"`,
      );
    }
    open = { fence: fence[2]!, indent: fence[1]!.length, block: { form, line: index + 1, body: [] } };
  });
  if (open) throw new GuideFormatError(file, open.block.line, "this fenced block is never closed");
  return blocks;
}

/** `# → text` as a pattern: `…` is any characters, a run of spaces any run of blanks. */
export function textPattern(text: string): RegExp {
  const parts = text.trim().split("…").map((part) =>
    part
      .split(/\s+/)
      .map((word) => word.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"))
      .join("\\s+"),
  );
  return new RegExp(parts.join(".*?"));
}

function parseExpectation(text: string, file: string, line: number): Expectation | undefined {
  const trimmed = text.trim();
  if (trimmed.startsWith("# →")) {
    const source = trimmed.slice(3).trim();
    if (source === "") throw new GuideFormatError(file, line, "`# →` needs the text the output must contain");
    return { kind: "text", source, pattern: textPattern(source), line };
  }
  const regex = /^# expect: \/(.+)\/([dgimsuy]*)$/.exec(trimmed);
  if (regex) return { kind: "regex", source: trimmed.slice("# expect: ".length), pattern: new RegExp(regex[1]!, regex[2]!.replace("g", "")), line };
  if (/^#\s*(->|=>|→|expect\b)/.test(trimmed) || /^#→/.test(trimmed)) {
    throw new GuideFormatError(file, line, "an expectation is written `# → TEXT` or `# expect: /REGEX/FLAGS`");
  }
  return undefined;
}

const isCommand = (text: string) => text.trim() !== "" && !text.trim().startsWith("#");

/** The steps of a file's sh blocks, in order; each step carries the expectations written after it. */
export function runnableSteps(markdown: string, file: string): Step[] {
  const steps: Step[] = [];
  for (const block of fencedBlocks(markdown, file)) {
    if (block.form !== RUN_FORM) continue;
    let current: Step | undefined;
    block.body.forEach((text, offset) => {
      const line = block.line + 1 + offset;
      const expectation = parseExpectation(text, file, line);
      if (expectation) {
        if (!current || !current.code.split("\n").some(isCommand)) {
          throw new GuideFormatError(file, line, "an expectation must follow a command in the same block");
        }
        current.expectations.push(expectation);
        return;
      }
      if (!current || current.expectations.length > 0) {
        if (current) steps.push(current);
        current = { code: text, line, expectations: [] };
      } else {
        current.code += "\n" + text;
      }
    });
    if (current && current.code.split("\n").some(isCommand)) steps.push(current);
  }
  return steps;
}

/**
 * One bash script for the steps: each step runs in the script's own shell (a `{ …; }` group, so
 * variables and `cd` carry) with its output in `<outDir>/<n>.out`; `<outDir>/current` names the
 * step running when the script stops.
 */
export function bashScript(steps: Step[], outDir: string): string {
  const lines = ["set -euo pipefail", `__guide_out=${JSON.stringify(outDir)}`];
  steps.forEach((step, n) => {
    lines.push(`echo ${n} > "$__guide_out/current"`, "{", step.code, `} > "$__guide_out/${n}.out" 2>&1 < /dev/null`);
  });
  lines.push(`echo done > "$__guide_out/current"`);
  return lines.join("\n") + "\n";
}

/** The expectations a step's output does not meet (empty: all met). */
export function unmetExpectations(step: Step, output: string): Expectation[] {
  return step.expectations.filter((e) => (e.kind === "text" ? !output.split("\n").some((line) => e.pattern.test(line)) : !e.pattern.test(output)));
}
