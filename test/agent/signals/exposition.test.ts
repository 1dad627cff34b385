// The strict text-format parser: real engine output (simulator captures and hand-written vLLM /
// SGLang text), escaping, types and suffixes, and every malformed line refused with its number.
import { describe, expect, it } from "vitest";
import { ExpositionError, parseExposition } from "../../../src/agent/signals/exposition.ts";
import { fixture } from "./support.ts";

describe("parseExposition", () => {
  it("reads the simulator's vLLM output: typed families, per-engine series, histogram parts", () => {
    const exposition = parseExposition(fixture("sim-vllm-dp2.txt"));
    expect(exposition.families.get("vllm:num_requests_running")).toMatchObject({ type: "gauge" });
    expect(exposition.samples("vllm:num_requests_running").map((s) => s.labels)).toEqual([
      { model_name: "qwen3", engine: "0" },
      { model_name: "qwen3", engine: "1" },
    ]);
    const ttft = exposition.families.get("vllm:time_to_first_token_seconds")!;
    expect(ttft.type).toBe("histogram");
    // 22 buckets + sum + count per engine, all in one family.
    expect(ttft.samples).toHaveLength(2 * (22 + 1 + 2));
    expect(exposition.samples("vllm:time_to_first_token_seconds_count").map((s) => s.value)).toEqual([3, 0]);
    expect(exposition.samples('vllm:time_to_first_token_seconds_bucket').find((s) => s.labels.le === "+Inf" && s.labels.engine === "0")?.value).toBe(3);
    expect(exposition.families.get("vllm:prompt_tokens_total")).toMatchObject({ type: "counter", help: "Number of prefill tokens processed." });
  });

  it("reads the simulator's SGLang output, including families declared without series", () => {
    const exposition = parseExposition(fixture("sim-sglang-dp2.txt"));
    expect(exposition.samples("sglang:num_running_reqs")).toHaveLength(2);
    expect(exposition.families.get("sglang:num_bootstrap_failed_reqs_total")).toMatchObject({ type: "counter", samples: [] });
    expect(exposition.samples("sglang:num_requests_total")[0]!.value).toBe(3);
  });

  it("reads prometheus_client text: _created gauges, process collectors, sorted labels", () => {
    const exposition = parseExposition(fixture("vllm-0.11-dp2.txt"));
    expect(exposition.samples("process_start_time_seconds")[0]!.value).toBe(1.76412345678e9);
    expect(exposition.families.get("vllm:prompt_tokens_created")!.type).toBe("gauge");
    expect(exposition.samples("vllm:request_success_total")).toHaveLength(10);
  });

  it("unescapes label values and HELP text", () => {
    const exposition = parseExposition(
      [
        "# HELP msdos_file_access_time_seconds A \\\\ path\\nand a second line",
        "# TYPE msdos_file_access_time_seconds gauge",
        'msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""} 1.458255915e9',
      ].join("\n"),
    );
    const family = exposition.families.get("msdos_file_access_time_seconds")!;
    expect(family.help).toBe("A \\ path\nand a second line");
    expect(family.samples[0]!.labels).toEqual({ path: "C:\\DIR\\FILE.TXT", error: 'Cannot find file:\n"FILE.TXT"' });
    expect(parseExposition(fixture("sglang-dp2-tp2-all-schedulers.txt")).samples("sglang:num_requests_total")[0]!.labels.team).toBe("a\\b");
  });

  it.each([
    ["metric_without_timestamp_and_labels 12.47", 12.47],
    ["a{} 1", 1],
    ['a{x="1",} 2', 2],
    ['a { x = "1" } 3 1395066363000', 3],
    ["a +Inf", Infinity],
    ["a -Inf", -Infinity],
    ["a 1e-3", 0.001],
    ["a -3982045", -3982045],
    ["\ta 5\t", 5],
  ])("reads the value of %j", (line, value) => {
    const [family] = parseExposition(line).families.values();
    expect(family!.samples[0]!.value).toBe(value);
  });

  it("reads NaN as NaN, not as a number", () => {
    expect(parseExposition("a NaN").samples("a")[0]!.value).toBeNaN();
  });

  it("files OpenMetrics-style counter samples (`x_total` under `# TYPE x counter`) under their family", () => {
    const exposition = parseExposition("# TYPE x counter\nx_total 4\nx_created 1.7e9");
    expect(exposition.families.get("x")!.samples.map((s) => s.name)).toEqual(["x_total", "x_created"]);
    expect(exposition.families.has("x_total")).toBe(false);
  });

  it("treats samples with no TYPE as untyped families of their own", () => {
    const exposition = parseExposition("foo_count 3\nfoo_sum 4");
    expect(exposition.families.get("foo_count")).toMatchObject({ type: "untyped" });
  });

  it.each([
    ["9abc 1", 1, /invalid metric name/],
    ["a{x=1} 1", 1, /expected '"'/],
    ['a{x="1" 1', 1, /expected "," or "}"/],
    ['a{x="1} 1', 1, /unterminated/],
    ['a{x="\\t"} 1', 1, /invalid escape/],
    ['a{x="1",x="2"} 1', 1, /given twice/],
    ['a{9x="1"} 1', 1, /invalid label name/],
    ["a", 1, /no value/],
    ["a one", 1, /invalid value "one"/],
    ["a 1 2 3", 1, /unexpected text/],
    ["a 1 1.5", 1, /invalid timestamp/],
    ["ok 1\n# TYPE b histogrammm", 2, /unknown metric type/],
    ["# TYPE b gauge\n# TYPE b counter", 2, /second TYPE/],
    ["b 1\n# TYPE b gauge", 2, /after its samples/],
    ["# HELP b x\n# HELP b y", 2, /second HELP/],
    ['a{x="1"} 1\na{x="1"} 2', 2, /duplicate series/],
  ])("refuses %j at line %i", (text, line, message) => {
    let caught: unknown;
    try {
      parseExposition(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ExpositionError);
    expect((caught as ExpositionError).line).toBe(line);
    expect((caught as Error).message).toMatch(message);
  });

  it("counts a series spelled with its labels in another order as a duplicate", () => {
    expect(() => parseExposition('a{x="1",y="2"} 1\na{y="2",x="1"} 1')).toThrow(/duplicate series/);
  });

  it("ignores plain comments, blank lines and a final newline", () => {
    expect([...parseExposition("# just a note\n\n# EOF\n").families.keys()]).toEqual([]);
  });
});
