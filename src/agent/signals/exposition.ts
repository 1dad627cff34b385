// A strict parser for the Prometheus text exposition format 0.0.4 (what vLLM's prometheus_client,
// SGLang and prom-client serve): `# HELP`/`# TYPE`, samples with escaped label values, optional
// timestamps, counters, gauges, histograms and summaries. A malformed line throws with its line
// number instead of being skipped, so a garbled scrape is reported as a failed read, never as values.
// Hand-written because the npm parsers lose labelled histogram series or reject `vllm:` names
// (src/agent/README.md, Decisions).

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Sample {
  /** The sample's own name, e.g. `vllm:time_to_first_token_seconds_sum`. */
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

export interface Family {
  name: string;
  type: MetricType;
  help?: string;
  samples: Sample[];
}

export interface Exposition {
  /** Families by name (the `# TYPE` name, or the sample name of an untyped sample). */
  readonly families: ReadonlyMap<string, Family>;
  /** Every sample with exactly this name, in order of appearance. */
  samples(name: string): readonly Sample[];
}

export class ExpositionError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = "ExpositionError";
  }
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
// Go's strconv.ParseFloat as Prometheus accepts it, without hex floats.
const FLOAT = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[Ii]nf(?:inity)?|NaN|nan)$/;
const TIMESTAMP = /^-?\d+$/;
const TYPES: ReadonlySet<string> = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);
/** Sample-name suffixes a typed family owns besides its own name. */
const SUFFIXES: Readonly<Record<MetricType, readonly string[]>> = {
  histogram: ["_bucket", "_sum", "_count", "_created"],
  summary: ["_sum", "_count", "_created"],
  // OpenMetrics declares `# TYPE x counter` and exposes `x_total`; 0.0.4 declares `x_total` itself.
  counter: ["_total", "_created"],
  gauge: [],
  untyped: [],
};

export function parseExposition(text: string): Exposition {
  const families = new Map<string, MutableFamily>();
  const bySample = new Map<string, Sample[]>();
  const seriesSeen = new Set<string>();
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const lineNumber = index + 1;
    const line = lines[index]!.replace(/^[ \t]+|[ \t\r]+$/g, "");
    if (line === "") continue;
    if (line.startsWith("#")) {
      parseComment(line, lineNumber, families);
      continue;
    }
    const sample = parseSample(line, lineNumber);
    const key = sample.name + "\u0000" + seriesKey(sample.labels);
    if (seriesSeen.has(key)) throw new ExpositionError(lineNumber, `duplicate series ${sample.name}{${seriesKey(sample.labels)}}`);
    seriesSeen.add(key);
    familyOf(sample.name, families).samples.push(sample);
    let list = bySample.get(sample.name);
    if (list === undefined) bySample.set(sample.name, (list = []));
    list.push(sample);
  }
  return { families, samples: (name) => bySample.get(name) ?? [] };
}

function parseComment(line: string, lineNumber: number, families: Map<string, MutableFamily>): void {
  const match = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(line);
  // Any other comment (including OpenMetrics `# EOF` and `# UNIT`) carries nothing we read.
  if (!match) return;
  const [, keyword, name, rest = ""] = match;
  if (!METRIC_NAME.test(name!)) throw new ExpositionError(lineNumber, `invalid metric name "${name}"`);
  if (keyword === "HELP") {
    const family = families.get(name!) ?? declare(families, name!, "untyped");
    if (family.help !== undefined) throw new ExpositionError(lineNumber, `second HELP for ${name}`);
    family.help = unescapeHelp(rest);
    return;
  }
  const type = rest.trim();
  if (!TYPES.has(type)) throw new ExpositionError(lineNumber, `unknown metric type "${type}" for ${name}`);
  const existing = families.get(name!);
  if (existing?.typed) throw new ExpositionError(lineNumber, `second TYPE for ${name}`);
  if (existing && existing.samples.length > 0) throw new ExpositionError(lineNumber, `TYPE for ${name} after its samples`);
  if (existing) {
    existing.type = type as MetricType;
    existing.typed = true;
  } else {
    declare(families, name!, type as MetricType).typed = true;
  }
}

interface MutableFamily extends Family {
  typed?: boolean;
}

function declare(families: Map<string, MutableFamily>, name: string, type: MetricType): MutableFamily {
  const family: MutableFamily = { name, type, samples: [] };
  families.set(name, family);
  return family;
}

/** The family a sample belongs to: its own typed name, or a typed base name whose suffix it carries. */
function familyOf(sampleName: string, families: Map<string, MutableFamily>): Family {
  const own = families.get(sampleName);
  if (own?.typed) return own;
  for (const [type, suffixes] of Object.entries(SUFFIXES) as [MetricType, readonly string[]][]) {
    for (const suffix of suffixes) {
      if (!sampleName.endsWith(suffix)) continue;
      const base = families.get(sampleName.slice(0, -suffix.length));
      if (base?.typed && base.type === type) return base;
    }
  }
  return own ?? declare(families, sampleName, "untyped");
}

function parseSample(line: string, lineNumber: number): Sample {
  const fail = (message: string): never => {
    throw new ExpositionError(lineNumber, message);
  };
  let position = 0;
  while (position < line.length && !" \t{".includes(line[position]!)) position++;
  const name = line.slice(0, position);
  if (!METRIC_NAME.test(name)) fail(`invalid metric name "${name}"`);
  const labels: Record<string, string> = {};
  const skipBlanks = () => {
    while (line[position] === " " || line[position] === "\t") position++;
  };
  skipBlanks();
  if (line[position] === "{") {
    position++;
    for (;;) {
      skipBlanks();
      if (line[position] === "}") break;
      const start = position;
      while (position < line.length && /[a-zA-Z0-9_]/.test(line[position]!)) position++;
      const labelName = line.slice(start, position);
      if (!LABEL_NAME.test(labelName)) fail(`invalid label name at column ${start + 1}`);
      if (Object.hasOwn(labels, labelName)) fail(`label "${labelName}" given twice`);
      skipBlanks();
      if (line[position] !== "=") fail(`expected "=" after label "${labelName}"`);
      position++;
      skipBlanks();
      if (line[position] !== '"') fail(`expected '"' to open the value of label "${labelName}"`);
      position++;
      let value = "";
      for (;;) {
        if (position >= line.length) fail(`unterminated value of label "${labelName}"`);
        const char = line[position++]!;
        if (char === '"') break;
        if (char !== "\\") {
          value += char;
          continue;
        }
        const escaped = line[position++];
        if (escaped === "\\") value += "\\";
        else if (escaped === '"') value += '"';
        else if (escaped === "n") value += "\n";
        else fail(`invalid escape "\\${escaped ?? ""}" in label "${labelName}"`);
      }
      labels[labelName] = value;
      skipBlanks();
      if (line[position] === ",") {
        position++;
        continue;
      }
      if (line[position] !== "}") fail(`expected "," or "}" after label "${labelName}"`);
      break;
    }
    position++;
  }
  const rest = line.slice(position).trim().split(/[ \t]+/);
  if (rest.length === 0 || rest[0] === "") fail(`no value for ${name}`);
  if (rest.length > 2) fail(`unexpected text after the value of ${name}`);
  if (!FLOAT.test(rest[0]!)) fail(`invalid value "${rest[0]}" for ${name}`);
  if (rest.length === 2 && !TIMESTAMP.test(rest[1]!)) fail(`invalid timestamp "${rest[1]}" for ${name}`);
  return { name, labels, value: parseFloatValue(rest[0]!) };
}

function parseFloatValue(text: string): number {
  const lower = text.toLowerCase();
  if (lower === "nan") return Number.NaN;
  if (/^[+-]?inf/.test(lower)) return lower.startsWith("-") ? -Infinity : Infinity;
  return Number(text);
}

function unescapeHelp(text: string): string {
  return text.replace(/\\(\\|n)/g, (_, char: string) => (char === "n" ? "\n" : "\\"));
}

/** Labels in name order, so the same series spelled in another order is still one series. */
function seriesKey(labels: Readonly<Record<string, string>>): string {
  return Object.keys(labels)
    .sort()
    .map((key) => `${key}=${JSON.stringify(labels[key])}`)
    .join(",");
}
