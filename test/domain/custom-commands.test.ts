import { describe, expect, it } from "vitest";
import { customCommandViolations, type CommandWriter } from "../../src/domain/custom-commands.ts";

const spec = (...commands: string[][]) => ({ roles: commands.map((command, i) => ({ name: `r${i}`, command })) }) as never;
const editor: CommandWriter = { installationAdmin: false, projectAllows: false };
const RUN = ["vllm", "serve", "m"];

describe("customCommandViolations", () => {
  it.each([
    ["no command, editor", editor, spec([]), undefined, []],
    ["new command, editor", editor, spec(RUN), undefined, ["/spec/roles/0/command"]],
    ["new command, installation admin", { installationAdmin: true, projectAllows: false }, spec(RUN), undefined, []],
    ["new command, project allows", { installationAdmin: false, projectAllows: true }, spec(RUN), undefined, []],
    ["unchanged command kept, editor", editor, spec(RUN), spec(RUN), []],
    ["changed command, editor", editor, spec([...RUN, "--x"]), spec(RUN), ["/spec/roles/0/command"]],
    ["command removed, editor", editor, spec([]), spec(RUN), []],
    ["second role gains one, editor", editor, spec(RUN, RUN), spec(RUN), ["/spec/roles/1/command"]],
    ["restored after removal (rollback), editor", editor, spec(RUN), spec([]), ["/spec/roles/0/command"]],
  ] as const)("%s", (_name, writer, next, previous, pointers) => {
    expect(customCommandViolations(writer, next, previous).map((e) => e.pointer)).toEqual(pointers);
  });
});
