// Label and field selectors as the API server reads `?labelSelector=` and `?fieldSelector=`.
import { describe, expect, it } from "vitest";
import {
  fieldValue,
  formatLabelSelector,
  fromSelectorObject,
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from "../../../k8s/sim/selectors.ts";

const labels = { "berth.dev/role": "decode", "berth.dev/replica": "2", tier: "gpu", empty: "" };

describe("label selectors", () => {
  it.each([
    ["", true],
    ["berth.dev/role=decode", true],
    ["berth.dev/role==decode", true],
    ["berth.dev/role=prefill", false],
    ["berth.dev/role!=prefill", true],
    ["missing!=x", true],
    ["berth.dev/role in (prefill,decode)", true],
    ["berth.dev/role in (prefill, encode)", false],
    ["berth.dev/role notin (prefill)", true],
    ["missing notin (a)", true],
    ["missing in (a)", false],
    ["tier", true],
    ["missing", false],
    ["!missing", true],
    ["!tier", false],
    ["berth.dev/replica>1", true],
    ["berth.dev/replica<2", false],
    ["empty=", true],
    ["tier=gpu,berth.dev/role in (decode),!missing", true],
    ["tier=gpu,berth.dev/role in (prefill)", false],
  ])("%j selects: %s", (text, expected) => {
    expect(matchesLabels(parseLabelSelector(text), labels)).toBe(expected);
  });

  it.each(["a in (b", "a b c", "-bad=x", "a=b c", "a>x", "a=,", "Bad_/x=y"])("%j is a parse error", (text) => {
    expect(() => parseLabelSelector(text)).toThrow(SelectorError);
  });

  it("reads a Deployment's selector object and renders it back as Scale.status.selector does", () => {
    const selector = fromSelectorObject({ matchLabels: { app: "router" }, matchExpressions: [{ key: "tier", operator: "In", values: ["gpu", "cpu"] }, { key: "old", operator: "DoesNotExist" }] });
    expect(matchesLabels(selector, { app: "router", tier: "gpu" })).toBe(true);
    expect(matchesLabels(selector, { app: "router", tier: "gpu", old: "1" })).toBe(false);
    expect(formatLabelSelector(selector)).toBe("app=router,tier in (gpu,cpu),!old");
    expect(() => fromSelectorObject({ matchExpressions: [{ key: "a", operator: "Near" }] })).toThrow(SelectorError);
  });
});

describe("field selectors", () => {
  const pod = { metadata: { name: "a,b", namespace: "ns" }, status: { phase: "Running" }, spec: { nodeName: "gpu-a" } };

  it.each([
    ["metadata.name=a\\,b", true],
    ["metadata.name==a\\,b", true],
    ["metadata.name!=a\\,b", false],
    ["status.phase=Running,spec.nodeName=gpu-a", true],
    ["status.phase=Pending", false],
    ["status.phase!=Pending", true],
    ["spec.nodeName=", false],
    ["spec.missing=", true],
  ])("%j selects: %s", (text, expected) => {
    expect(matchesFields(parseFieldSelector(text), pod)).toBe(expected);
  });

  it("rejects a requirement without an operator", () => {
    expect(() => parseFieldSelector("metadata.name")).toThrow(SelectorError);
  });

  it("reads nested fields as strings", () => {
    expect(fieldValue({ involvedObject: { uid: "u1", count: 3 } }, "involvedObject.count")).toBe("3");
  });
});
