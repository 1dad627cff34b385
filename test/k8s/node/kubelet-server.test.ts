// The node's log endpoint, its pure half: which paths it serves and how it reads a log request's
// query (as the kubelet does: an empty or absent number is no limit, "true" and "1" are true).
// The server itself answers the real API server in test/real-cluster/node.test.ts.
import { describe, expect, it } from "vitest";
import { containerLogTarget, logRequestOf } from "../../../k8s/node/kubelet-server.ts";

describe("containerLogTarget", () => {
  it.each([
    ["/containerLogs/default/engine-0/vllm", { namespace: "default", pod: "engine-0", container: "vllm" }],
    ["/containerLogs/berth-x/p%2Dq/c", { namespace: "berth-x", pod: "p-q", container: "c" }],
    ["/containerLogs/default/engine-0", undefined],
    ["/containerLogs/default/engine-0/vllm/extra", undefined],
    ["/logs/", undefined],
    ["/exec/default/engine-0/vllm", undefined],
  ])("%s", (path, target) => {
    expect(containerLogTarget(path)).toEqual(target);
  });
});

describe("logRequestOf", () => {
  it("no query: the whole current log, once", () => {
    expect(logRequestOf("vllm", new URLSearchParams())).toEqual({
      container: "vllm", previous: false, tailLines: undefined, limitBytes: undefined, sinceSeconds: undefined, timestamps: false, follow: false,
    });
  });
  it("every parameter kubectl sends", () => {
    const query = new URLSearchParams("tailLines=10&limitBytes=4096&sinceSeconds=60&timestamps=true&follow=1&previous=true");
    expect(logRequestOf("router", query)).toEqual({ container: "router", previous: true, tailLines: 10, limitBytes: 4096, sinceSeconds: 60, timestamps: true, follow: true });
  });
  it("an empty number is no limit; anything but true or 1 is false", () => {
    expect(logRequestOf("c", new URLSearchParams("tailLines=&follow=yes"))).toMatchObject({ tailLines: undefined, follow: false });
  });
});
