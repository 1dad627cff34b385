// kubectl 1.32 against the simulated cluster with its default client-side checks on: apply,
// create -f and replace -f read the server's OpenAPI v3 documents and send
// fieldValidation=Strict, so a wrong field is refused by the server as kube-apiserver refuses
// it; explain reads the same documents; wait, get -w, logs, describe and delete work; exec,
// attach, port-forward and top print the Status that says why the simulator cannot.
import { execFile, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { berthPrograms } from "../../../k8s/sim/index.ts";
import { RESOURCES } from "../../../k8s/sim/resources.ts";
import { ROUTER_IMAGE, startTestCluster, waitFor, type TestCluster } from "./support.ts";

const IDLE_IMAGE = "test.local/idle:1";
const ENGINE = { name: "engine", image: "vllm/vllm-openai:v0.11.0", command: ["vllm", "serve", "m"] };

let t: TestCluster;
beforeAll(async () => {
  t = await startTestCluster({ programs: { ...berthPrograms({ routerImage: ROUTER_IMAGE, simEngineFlags: ["--latency-profile", "turbo"] }), noProcessImages: [IDLE_IMAGE] } });
});
afterAll(async () => {
  await t?.stop();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** kubectl with this cluster's kubeconfig and a cache of its own; never throws on a non-zero exit. */
function kubectl(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile("kubectl", ["--kubeconfig", t.cluster.kubeconfigPath!, "--cache-dir", join(t.dir, "kube-cache"), ...args], { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") return reject(error);
      resolve({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr });
    });
  });
}

function manifest(name: string, object: object): string {
  const path = join(t.dir, name);
  writeFileSync(path, JSON.stringify(object));
  return path;
}

const configMap = (name: string, data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data });
const enginePod = (name: string, container: object = ENGINE) => ({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" }, spec: { containers: [container] } });

describe("writes with validation on", () => {
  it("apply -f creates and then updates objects of every served kind", async () => {
    const fixture = join(import.meta.dirname, "fixtures", "every-kind.yaml");
    const created = await kubectl("apply", "-f", fixture);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    const lines = created.stdout.trim().split("\n");
    expect(lines).toHaveLength(RESOURCES.length);
    for (const line of lines) expect(line).toMatch(/ created$/);
    const again = await kubectl("apply", "-f", fixture);
    expect(again.code).toBe(0);
    for (const line of again.stdout.trim().split("\n")) expect(line).toMatch(/ (unchanged|configured)$/);
  });

  it("create -f, replace -f and apply -f change a ConfigMap", async () => {
    expect((await kubectl("create", "-f", manifest("cm-1.json", configMap("settings", { mode: "a" }))))).toMatchObject({ code: 0, stdout: "configmap/settings created\n" });
    expect((await kubectl("replace", "-f", manifest("cm-2.json", configMap("settings", { mode: "b" }))))).toMatchObject({ code: 0, stdout: "configmap/settings replaced\n" });
    expect((await kubectl("get", "configmap", "settings", "-o", "jsonpath={.data.mode}")).stdout).toBe("b");
    const applied = await kubectl("apply", "-f", manifest("cm-3.json", configMap("settings", { mode: "c" })));
    expect(applied).toMatchObject({ code: 0, stdout: "configmap/settings configured\n" });
    expect((await kubectl("get", "configmap", "settings", "-o", "jsonpath={.data.mode}")).stdout).toBe("c");
  });

  it("apply -f removes a list item left out of the manifest (strategic merge by the list's key)", async () => {
    const deployment = (env: { name: string; value: string }[]) => ({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "envs", namespace: "default" },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: "envs" } },
        template: { metadata: { labels: { app: "envs" } }, spec: { containers: [{ name: "main", image: IDLE_IMAGE, env }] } },
      },
    });
    const both = [{ name: "A", value: "1" }, { name: "B", value: "2" }];
    expect((await kubectl("apply", "-f", manifest("envs-1.json", deployment(both)))).code).toBe(0);
    expect((await kubectl("apply", "-f", manifest("envs-2.json", deployment([{ name: "A", value: "3" }]))))).toMatchObject({ code: 0, stdout: "deployment.apps/envs configured\n" });
    const env = await kubectl("get", "deployment", "envs", "-o", "jsonpath={.spec.template.spec.containers[0].env}");
    expect(JSON.parse(env.stdout)).toEqual([{ name: "A", value: "3" }]);
  });

  it("refuses an unknown field on apply, create and replace, as kube-apiserver words it", async () => {
    const bad = manifest("bad-pod.json", enginePod("typo", { ...ENGINE, imagee: "x" }));
    const refusal = 'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].imagee"';
    for (const verb of ["apply", "create"]) {
      const run = await kubectl(verb, "-f", bad);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`Error from server (BadRequest): error when creating "${bad}": ${refusal}`);
    }
    expect((await kubectl("get", "pod", "typo")).stderr).toContain('pods "typo" not found');
    const typo = manifest("bad-cm.json", { ...configMap("settings", { mode: "d" }), dataa: { x: "y" } });
    const replaced = await kubectl("replace", "-f", typo);
    expect(replaced.code).toBe(1);
    expect(replaced.stderr).toContain('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "dataa"');
    const wrongType = await kubectl("apply", "-f", manifest("bad-deploy.json", { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "typed" }, spec: { replicas: "two" } }));
    expect(wrongType.code).toBe(1);
    expect(wrongType.stderr).toContain("json: cannot unmarshal string into Go struct field spec.replicas of type integer");
  });

  it("--validate=false sends the unknown field and the server drops it with a warning", async () => {
    const run = await kubectl("create", "--validate=false", "-f", manifest("lax-cm.json", { ...configMap("lax", { a: "b" }), extra: true }));
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    const warned = await kubectl("create", "--validate=warn", "-f", manifest("warn-cm.json", { ...configMap("warned", { a: "b" }), extra: true }));
    expect(warned.code).toBe(0);
    expect(warned.stderr).toContain('Warning: unknown field "extra"');
  });
});

describe("explain", () => {
  it("describes a nested field from the served schemas", async () => {
    const run = await kubectl("explain", "pods.spec.containers");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("KIND:       Pod");
    expect(run.stdout).toContain("FIELD: containers <[]Container>");
    expect(run.stdout).toContain("List of containers belonging to the pod.");
    expect(run.stdout).toMatch(/\n {2}image\t<string>\n/);
    expect(run.stdout).toMatch(/\n {2}name\t<string> -required-\n/);
  });

  it.each(RESOURCES.map((r) => [r.group ? `${r.resource}.${r.group}` : r.resource, r.kind]))("explain %s names kind %s", async (resource, kind) => {
    const run = await kubectl("explain", resource);
    expect(run.stderr).toBe("");
    expect(run.stdout).toContain(`KIND:       ${kind}`);
    expect(run.stdout).toContain("FIELDS:");
  });

  it("explain --output plaintext-openapiv2 fails: the v2 document is served as JSON only", async () => {
    const run = await kubectl("explain", "pods", "--output", "plaintext-openapiv2");
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("NotAcceptable");
  });
});

describe("a running pod", () => {
  it("apply, wait for Ready, logs, describe, get -w, delete", async () => {
    expect((await kubectl("apply", "-f", manifest("web.json", enginePod("web"))))).toMatchObject({ code: 0, stdout: "pod/web created\n" });
    const waited = await kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s");
    expect(waited).toMatchObject({ code: 0, stdout: "pod/web condition met\n" });
    // Ready comes as the process starts; its first lines follow a moment later.
    const logs = await waitFor("the engine's first log line", async () => {
      const run = await kubectl("logs", "web");
      return run.code === 0 && run.stdout.includes("berth-sim") && run;
    });
    expect(logs.stdout).toContain("listening on http://127.0.1.");
    const described = await kubectl("describe", "pod", "web");
    expect(described.code).toBe(0);
    expect(described.stdout).toMatch(/^Name:\s+web$/m);
    expect(described.stdout).toMatch(/^Status:\s+Running$/m);
    expect(described.stdout).toMatch(/^IP:\s+127\.0\.1\.\d+$/m);

    // get -w ends on its own after --request-timeout; a pod created while it runs shows up.
    const watcher = spawn("kubectl", ["--kubeconfig", t.cluster.kubeconfigPath!, "get", "pods", "-w", "--request-timeout=8s"], { stdio: ["ignore", "pipe", "pipe"] });
    let watched = "";
    watcher.stdout.on("data", (chunk: Buffer) => (watched += chunk.toString()));
    const ended = new Promise<number | null>((resolve) => watcher.on("exit", resolve));
    for (let i = 0; i < 100 && !watched.includes("web"); i++) await new Promise((r) => setTimeout(r, 50));
    expect((await kubectl("apply", "-f", manifest("late.json", enginePod("late", { name: "main", image: IDLE_IMAGE })))).code).toBe(0);
    await ended;
    expect(watched).toMatch(/^NAME\s+READY\s+STATUS/);
    expect(watched).toMatch(/^web\s+1\/1\s+Running/m);
    expect(watched).toMatch(/^late\s+/m);

    const deleted = await kubectl("delete", "pod", "late", "web", "--wait=true", "--timeout=60s");
    expect(deleted).toMatchObject({ code: 0, stdout: 'pod "late" deleted\npod "web" deleted\n' });
  }, 120_000);
});

describe("what the simulator cannot do", () => {
  beforeAll(async () => {
    await kubectl("apply", "-f", manifest("idle.json", enginePod("idle", { name: "main", image: IDLE_IMAGE })));
    await kubectl("wait", "--for=condition=Ready", "pod/idle", "--timeout=60s");
  });

  it.each([
    ["exec", ["exec", "idle", "--", "ls"], "Error from server (NotImplemented): exec is not supported: the simulated cluster runs each container as a plain process"],
    ["attach", ["attach", "idle"], "Error from server (NotImplemented): attach is not supported"],
    ["port-forward", ["port-forward", "pod/idle", "0:8000"], "error upgrading connection: port-forward is not supported and not needed: pod and Service addresses"],
    ["top pod", ["top", "pod"], "Error from server (NotImplemented): the simulated cluster has no metrics server"],
    ["top node", ["top", "node"], "Error from server (NotImplemented): the simulated cluster has no metrics server"],
  ])("kubectl %s prints why", async (_name, args, message) => {
    const run = await kubectl(...args);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(message);
  });

  it.each([
    ["/api/v1/namespaces/default/pods/idle/exec?command=ls", "exec is not supported"],
    ["/api/v1/namespaces/default/pods/idle/attach", "attach is not supported"],
    ["/api/v1/namespaces/default/pods/idle/portforward", "port-forward is not supported"],
    ["/api/v1/namespaces/default/pods/idle/proxy/health", "the pod proxy is not supported"],
    ["/api/v1/namespaces/default/services/every-svc:80/proxy/", "the service proxy is not supported"],
    ["/api/v1/nodes/gpu-a/proxy/metrics", "the node proxy is not supported"],
    ["/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", "no metrics server"],
  ])("GET %s answers a 501 Status", async (path, message) => {
    const response = await fetch(`${t.cluster.url}${path}`);
    expect(response.status).toBe(501);
    const status = (await response.json()) as Record<string, unknown>;
    expect(status).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotImplemented", code: 501 });
    expect(status.message).toContain(message);
  });
});
