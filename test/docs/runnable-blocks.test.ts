// The guide marking: which fences run, how a step and its expectations are cut, how an
// expectation matches, and that an unknown form or a stray expectation is refused.
import { describe, expect, it } from "vitest";
import { fencedBlocks, runnableSteps, textPattern, unmetExpectations } from "./runnable-blocks.ts";

const md = (...lines: string[]) => lines.join("\n");

describe("fencedBlocks", () => {
  it.each([
    ["```bash", 'got "```bash"'],
    ["```", 'got "```"'],
    ["```shell", 'got "```shell"'],
    ["~~~console", 'got "~~~console"'],
  ])("refuses %s", (fence, message) => {
    expect(() => fencedBlocks(md("# t", fence, "echo hi", "```"), "g.md")).toThrow(message);
  });

  it("takes inline code spans of backticks in prose for what they are, not fences", () => {
    expect(fencedBlocks(md("- A ```` ```sh ```` block runs;", "  ```` ```text ```` never does."), "g.md")).toEqual([]);
  });

  it("refuses a block never closed, naming its line", () => {
    expect(() => fencedBlocks(md("x", "```sh", "echo hi"), "g.md")).toThrow("g.md:2: this fenced block is never closed");
  });

  it("reads indented blocks inside lists and keeps inert forms", () => {
    const blocks = fencedBlocks(md("- item", "  ```sh", "  echo a", "  ```", "```yaml", "a: 1", "```"), "g.md");
    expect(blocks).toEqual([
      { form: "sh", line: 2, body: ["echo a"] },
      { form: "yaml", line: 5, body: ["a: 1"] },
    ]);
  });
});

describe("runnableSteps", () => {
  it("cuts a step at each group of expectations and skips non-sh blocks", () => {
    const steps = runnableSteps(
      md("```sh", "X=1", "echo $X", "# → 1", "# expect: /^1$/m", "# a plain comment", "echo b", "```", "```text", "echo never", "```", "```sh", "echo c", "```"),
      "g.md",
    );
    expect(steps.map((s) => [s.line, s.code, s.expectations.map((e) => e.source)])).toEqual([
      [2, "X=1\necho $X", ["1", "/^1$/m"]],
      [6, "# a plain comment\necho b", []],
      [13, "echo c", []],
    ]);
  });

  it.each([
    [md("```sh", "# → nothing ran", "```"), "g.md:2: an expectation must follow a command"],
    [md("```sh", "echo a", "# -> a", "```"), "g.md:3: an expectation is written"],
    [md("```sh", "echo a", "# expect /a/", "```"), "g.md:3: an expectation is written"],
    [md("```sh", "echo a", "# →", "```"), "g.md:3: `# →` needs the text"],
  ])("refuses a malformed expectation", (text, message) => {
    expect(() => runnableSteps(text, "g.md")).toThrow(message);
  });
});

describe("expectations", () => {
  it.each([
    ["deployment/qwen-chat created", "deployment/qwen-chat created\n", true],
    ["qwen-chat dep_… Ready main 2/2", "qwen-chat   dep_abc   prj_x   Ready   main 2/2   1   6s", true],
    ["qwen-chat dep_… Ready main 2/2", "qwen-chat   dep_abc   prj_x   Starting   main 0/2   1   6s", false],
    ["qwen-chat dep_… Ready", "qwen-chat   dep_abc   Ready   main 2/2", true],
    ["HTTP/1.1 201", "HTTP/1.1 200 OK", false],
    ['"phase": "Pending"', '  "phase": "Pending",', true],
    ["a … b", "a\nb", false],
  ])("`# → %s` against %j: %s", (text, output, met) => {
    const step = { code: "x", line: 1, expectations: [{ kind: "text" as const, source: text, pattern: textPattern(text), line: 2 }] };
    expect(unmetExpectations(step, output).length === 0).toBe(met);
  });
});
