// Label and field selectors as the Kubernetes API parses them (pure). Label selectors take the
// string grammar of `?labelSelector=` (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
// `!a`, `a>1`, `a<1`, comma = AND) and the object form of a Deployment's `spec.selector`.
// Field selectors take `path=value`, `path==value`, `path!=value` over any dotted field path;
// the real server allows only a few paths per kind, the simulated one every path.

export class SelectorError extends Error {}

export type Operator = "=" | "!=" | "in" | "notin" | "exists" | "!exists" | ">" | "<";

export interface Requirement {
  key: string;
  operator: Operator;
  values: string[];
}

export type LabelSelector = Requirement[];

export interface LabelSelectorObject {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

function checkKey(key: string, text: string): void {
  if (!KEY.test(key) || key.length > 317) throw new SelectorError(`unable to parse requirement: invalid label key "${key}" in "${text}"`);
}

function checkValue(value: string, text: string): void {
  if (value.length > 63 || !VALUE.test(value)) throw new SelectorError(`unable to parse requirement: invalid label value "${value}" in "${text}"`);
}

/** Splits on commas outside parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  if (depth !== 0) throw new SelectorError(`unable to parse requirement: unbalanced parentheses in "${text}"`);
  parts.push(current);
  return parts;
}

/** Parses `?labelSelector=`; the empty string selects everything. */
export function parseLabelSelector(text: string): LabelSelector {
  if (text.trim() === "") return [];
  return splitTopLevel(text).map((raw) => parseRequirement(raw.trim(), text));
}

function parseRequirement(part: string, text: string): Requirement {
  if (part === "") throw new SelectorError(`unable to parse requirement: empty requirement in "${text}"`);
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(part);
  if (set) {
    const [, key, op, list] = set as unknown as [string, string, "in" | "notin", string];
    checkKey(key, text);
    const values = list.split(",").map((v) => v.trim());
    if (values.length === 1 && values[0] === "" && op === "in") throw new SelectorError(`unable to parse requirement: for 'in' operator, values set can't be empty in "${text}"`);
    for (const value of values) checkValue(value, text);
    return { key, operator: op, values };
  }
  if (part.startsWith("!")) {
    const key = part.slice(1).trim();
    checkKey(key, text);
    return { key, operator: "!exists", values: [] };
  }
  const binary = /^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(.*)$/.exec(part);
  if (binary) {
    const [, key, op, value] = binary as unknown as [string, string, string, string];
    checkKey(key, text);
    if (op === ">" || op === "<") {
      if (!/^-?\d+$/.test(value)) throw new SelectorError(`unable to parse requirement: for '${op}' operator, the value must be an integer in "${text}"`);
      return { key, operator: op, values: [value] };
    }
    checkValue(value, text);
    return { key, operator: op === "!=" ? "!=" : "=", values: [value] };
  }
  checkKey(part, text);
  return { key: part, operator: "exists", values: [] };
}

export function matchesRequirement(req: Requirement, labels: Readonly<Record<string, string>> | undefined): boolean {
  const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, req.key);
  const value = has ? labels![req.key]! : undefined;
  switch (req.operator) {
    case "=":
      return has && value === req.values[0];
    case "!=":
      return !has || value !== req.values[0];
    case "in":
      return has && req.values.includes(value!);
    case "notin":
      return !has || !req.values.includes(value!);
    case "exists":
      return has;
    case "!exists":
      return !has;
    case ">":
    case "<": {
      if (!has || !/^-?\d+$/.test(value!)) return false;
      const left = Number(value);
      const right = Number(req.values[0]);
      return req.operator === ">" ? left > right : left < right;
    }
  }
}

export function matchesLabels(selector: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  return selector.every((req) => matchesRequirement(req, labels));
}

/** A `metav1.LabelSelector` object as requirements; an empty object selects everything. */
export function fromSelectorObject(selector: LabelSelectorObject | undefined): LabelSelector {
  if (!selector) return [];
  const requirements: Requirement[] = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({ key, operator: "=", values: [value] }));
  for (const expression of selector.matchExpressions ?? []) {
    const operator = ({ In: "in", NotIn: "notin", Exists: "exists", DoesNotExist: "!exists" } as const)[expression.operator as "In"];
    if (!operator) throw new SelectorError(`"${expression.operator}" is not a valid label selector operator`);
    requirements.push({ key: expression.key, operator, values: expression.values ?? [] });
  }
  return requirements;
}

/** Renders requirements back to the string grammar (for Scale.status.selector and messages). */
export function formatLabelSelector(selector: LabelSelector): string {
  return selector
    .map(({ key, operator, values }) => {
      switch (operator) {
        case "=":
        case "!=":
        case ">":
        case "<":
          return `${key}${operator}${values[0]}`;
        case "in":
        case "notin":
          return `${key} ${operator} (${values.join(",")})`;
        case "exists":
          return key;
        case "!exists":
          return `!${key}`;
      }
    })
    .join(",");
}

export interface FieldRequirement {
  path: string;
  operator: "=" | "!=";
  value: string;
}

/** Splits on unescaped commas and unescapes `\,`, `\=`, `\\`. */
function splitEscaped(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "\\" && i + 1 < text.length) {
      current += ch + text[++i]!;
      continue;
    }
    if (ch === separator) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  parts.push(current);
  return parts;
}

const unescape = (text: string) => text.replace(/\\(.)/g, "$1");

export function parseFieldSelector(text: string): FieldRequirement[] {
  if (text.trim() === "") return [];
  return splitEscaped(text, ",").map((raw) => {
    const part = raw.trim();
    for (let i = 0; i < part.length; i++) {
      const ch = part[i];
      if (ch === "\\") {
        i++;
        continue;
      }
      const negated = ch === "!" && part[i + 1] === "=";
      if (!negated && ch !== "=") continue;
      const width = negated || part[i + 1] === "=" ? 2 : 1;
      const path = unescape(part.slice(0, i).trim());
      if (path === "") break;
      return { path, operator: negated ? "!=" : "=", value: unescape(part.slice(i + width).trim()) };
    }
    throw new SelectorError(`invalid selector: '${text}'; can't understand '${raw}'`);
  });
}

/** The string form of a field (`metadata.name`, `status.phase`, `spec.nodeName`, `involvedObject.uid`…). */
export function fieldValue(object: unknown, path: string): string {
  let node: unknown = object;
  for (const segment of path.split(".")) {
    if (node === null || typeof node !== "object") return "";
    node = (node as Record<string, unknown>)[segment];
  }
  if (node === undefined || node === null) return "";
  return typeof node === "object" ? JSON.stringify(node) : String(node);
}

export function matchesFields(selector: readonly FieldRequirement[], object: unknown): boolean {
  return selector.every(({ path, operator, value }) => (fieldValue(object, path) === value) === (operator === "="));
}
