// kubectl's protobuf request bodies. First the decoder on bytes the real kubectl sends to a small
// loopback server that records each POST, checked against the JSON the same kubectl prints for
// the same command (`--dry-run=client -o json`); then each command against a started simulated
// cluster, read back with `kubectl get -o json`.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import protobuf from "protobufjs/light.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeKubeconfig } from "../../../k8s/sim/kubeconfig.ts";
import { ApiError } from "../../../k8s/sim/objects.ts";
import { decodeProtobufBody, PROTOBUF_CONTENT_TYPE } from "../../../k8s/sim/protobuf.ts";
import { coreVersions, findResource, groupDocument, groupList, groupVersion, resourceList } from "../../../k8s/sim/resources.ts";
import { kubectl, startTestCluster, waitFor, type TestCluster } from "./support.ts";

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "berth-protobuf-"));
writeFileSync(join(dir, "config.json"), '{"debug":true}\n');
writeFileSync(join(dir, "blob.bin"), Buffer.from([0xff, 0xfe, 0x00, 0x01]));

/** A pod the capture server serves, so `kubectl debug --copy-to` sends a rich Pod (probes, quantities, volumes). */
const RICH_POD = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "rich", namespace: "default", labels: { app: "rich" }, annotations: { note: "n" } },
  spec: {
    containers: [
      {
        name: "engine",
        image: "vllm/vllm-openai:v0.9.0",
        args: ["--port", "8000"],
        ports: [{ name: "http", containerPort: 8000, protocol: "TCP" }],
        env: [
          { name: "PLAIN", value: "x" },
          { name: "FROM_CM", valueFrom: { configMapKeyRef: { name: "settings", key: "k", optional: true } } },
          { name: "FROM_SECRET", valueFrom: { secretKeyRef: { name: "creds", key: "token" } } },
        ],
        resources: { limits: { "nvidia.com/gpu": "1", memory: "16Gi" }, requests: { cpu: "500m" } },
        readinessProbe: { httpGet: { path: "/health", port: "http" }, periodSeconds: 5 },
        livenessProbe: { tcpSocket: { port: 8000 }, failureThreshold: 2 },
        volumeMounts: [{ name: "cache", mountPath: "/cache" }, { name: "settings", mountPath: "/etc/settings", readOnly: true }],
      },
    ],
    volumes: [
      { name: "cache", emptyDir: { sizeLimit: "1Gi" } },
      { name: "settings", configMap: { name: "settings", defaultMode: 420 } },
    ],
    nodeSelector: { "nvidia.com/gpu.product": "H100" },
    tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
    // A pointer field in Go (*int64): its 0 is sent and must survive.
    terminationGracePeriodSeconds: 0,
    restartPolicy: "Always",
  },
};

interface Captured {
  path: string;
  contentType: string;
  body: Buffer;
}

let server: Server;
let captureConfig: string;
const captured: Captured[] = [];

/** Enough of the API for kubectl to send its create: discovery, the rich pod, and POSTs that are recorded and echoed by name. */
function startCaptureServer(): Promise<Server> {
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      const json = (code: number, body: unknown) => {
        res.writeHead(code, { "Content-Type": "application/json" });
        res.end(JSON.stringify(body));
      };
      const segments = path.split("/").filter(Boolean);
      if (req.method === "POST") {
        captured.push({ path, contentType: String(req.headers["content-type"]), body: Buffer.concat(chunks) });
        const [group, version] = segments[0] === "api" ? ["", segments[1]!] : [segments[1]!, segments[2]!];
        const resource = findResource(group, version, segments.at(-1)!);
        const namespace = segments.includes("namespaces") && segments.at(-1) !== "namespaces" ? segments[segments.indexOf("namespaces") + 1] : undefined;
        return json(201, { apiVersion: resource ? groupVersion(resource) : `${group}/${version}`, kind: resource?.kind ?? "Job", metadata: { name: "captured", namespace } });
      }
      if (path === "/api") return json(200, coreVersions("127.0.0.1"));
      if (path === "/apis") return json(200, groupList());
      if (path === "/api/v1/namespaces/default/pods/rich") return json(200, RICH_POD);
      if (segments[0] === "api" && segments.length === 2) return json(200, resourceList("", segments[1]!));
      if (segments[0] === "apis" && segments.length === 2) return json(200, groupDocument(segments[1]!));
      if (segments[0] === "apis" && segments.length === 3) return json(200, resourceList(segments[1]!, segments[2]!) ?? {});
      json(404, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404, message: "not found" });
    });
  });
  return new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve(srv)));
}

/** Runs kubectl against the capture server and returns the one body it POSTed. */
async function captureCreate(args: string[]): Promise<Captured> {
  const before = captured.length;
  await run("kubectl", ["--kubeconfig", captureConfig, "--cache-dir", join(dir, "cache"), ...args], { cwd: dir, timeout: 20_000 });
  expect(captured.length).toBe(before + 1);
  return captured.at(-1)!;
}

/** What the same kubectl prints as JSON for the object it would create, without the nulls Go writes for zero times. */
async function kubectlJson(args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run("kubectl", ["--kubeconfig", captureConfig, "--cache-dir", join(dir, "cache"), ...args, "--dry-run=client", "-o", "json"], { cwd: dir, timeout: 20_000 });
  return JSON.parse(stdout, (_key, value) => (value === null ? undefined : value)) as Record<string, unknown>;
}

beforeAll(async () => {
  server = await startCaptureServer();
  captureConfig = writeKubeconfig(join(dir, "capture-kubeconfig"), `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe("decodeProtobufBody on kubectl's bytes", () => {
  it.each([
    { command: "create namespace x", expected: { kind: "Namespace", metadata: { name: "x" } } },
    { command: "create configmap c --from-literal=a=b --from-literal=k=v", expected: { kind: "ConfigMap", data: { a: "b", k: "v" } } },
    { command: "create configmap files --from-file=config.json --from-file=blob.bin", expected: { data: { "config.json": '{"debug":true}\n' }, binaryData: { "blob.bin": "//4AAQ==" } } },
    { command: "create secret generic s --from-literal=a=b", expected: { kind: "Secret", data: { a: "Yg==" } } },
    { command: "create secret docker-registry reg --docker-server=r.example --docker-username=u --docker-password=p", expected: { type: "kubernetes.io/dockerconfigjson" } },
    {
      command: "create deployment d --image=nginx --replicas=0 --port=8080",
      // replicas is a pointer in Go: an explicit 0 survives, while by-value zeros are dropped.
      expected: { apiVersion: "apps/v1", kind: "Deployment", spec: { replicas: 0, selector: { matchLabels: { app: "d" } } } },
    },
    { command: "create service clusterip web --tcp=80:8080", expected: { spec: { type: "ClusterIP", ports: [{ name: "80-8080", port: 80, protocol: "TCP", targetPort: 8080 }] } } },
    { command: "create serviceaccount robot", expected: { kind: "ServiceAccount", metadata: { name: "robot" } } },
    { command: "create role reader --verb=get,list --resource=pods", expected: { apiVersion: "rbac.authorization.k8s.io/v1", rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }] } },
    { command: "create rolebinding rb --role=reader --serviceaccount=default:robot", expected: { roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" } } },
    { command: "create clusterrole nodes --verb=get --resource=nodes", expected: { kind: "ClusterRole" } },
    { command: "create clusterrolebinding crb --clusterrole=nodes --user=u", expected: { subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "u" }] } },
  ])("kubectl $command", async ({ command, expected }) => {
    const args = command.split(" ");
    const { contentType, body } = await captureCreate(args);
    expect(contentType).toBe(PROTOBUF_CONTENT_TYPE);
    expect(body.subarray(0, 4).toString("latin1")).toBe("k8s\0");
    const decoded = decodeProtobufBody(body);
    expect(decoded).toMatchObject(expected);
    expect(decoded).toEqual(await kubectlJson(args));
  });

  it("a Pod from kubectl debug --copy-to: inlined probe handlers and volume sources, quantities, IntOrString, pointer zeros", async () => {
    const { contentType, body } = await captureCreate(["debug", "rich", "--copy-to=rich-copy", "--image=busybox", "--container=debug"]);
    expect(contentType).toBe(PROTOBUF_CONTENT_TYPE);
    const pod = decodeProtobufBody(body) as typeof RICH_POD;
    // kubectl debug drops the labels of a copy (so it joins no Service) and keeps the rest.
    expect(pod.metadata).toEqual({ name: "rich-copy", namespace: "default", annotations: { note: "n" } });
    const [engine, debug] = pod.spec.containers as Record<string, unknown>[];
    expect(engine).toEqual(RICH_POD.spec.containers[0]);
    expect(debug).toMatchObject({ name: "debug", image: "busybox" });
    expect(pod.spec.volumes).toEqual(RICH_POD.spec.volumes);
    expect(pod.spec.terminationGracePeriodSeconds).toBe(0);
    expect(pod.spec.tolerations).toEqual(RICH_POD.spec.tolerations);
  });

  it("a kind the simulated cluster does not serve is a 415 that names it and says to send JSON", async () => {
    const { body } = await captureCreate(["create", "job", "j", "--image=busybox"]);
    const error = (() => {
      try {
        decodeProtobufBody(body);
      } catch (e) {
        return e as ApiError;
      }
    })();
    expect(error).toBeInstanceOf(ApiError);
    expect(error!.code).toBe(415);
    expect(error!.message).toBe(
      "the simulated cluster cannot decode Job (batch/v1) from application/vnd.kubernetes.protobuf; send it as application/json instead, e.g. `kubectl create ... --dry-run=client -o json | kubectl apply -f -`",
    );
  });

  it("times, MicroTimes, managedFields and string IntOrStrings read as their JSON forms", () => {
    // Bytes built with the committed schema: kubectl sends none of these non-zero in a create.
    const schema = JSON.parse(readFileSync(new URL("../../../k8s/sim/protobuf-schema.json", import.meta.url), "utf8")) as { nested: protobuf.INamespace["nested"] };
    const root = protobuf.Root.fromJSON({ nested: schema.nested });
    const encode = (typeName: string, value: object) => root.lookupType(typeName).encode(root.lookupType(typeName).fromObject(value)).finish();
    const envelope = (apiVersion: string, kind: string, typeName: string, value: object) =>
      Buffer.concat([Buffer.from("k8s\0", "latin1"), encode("k8s.io.apimachinery.pkg.runtime.Unknown", { typeMeta: { apiVersion, kind }, raw: encode(typeName, value) })]);
    const event = decodeProtobufBody(
      envelope("v1", "Event", "k8s.io.api.core.v1.Event", {
        metadata: {
          name: "e",
          creationTimestamp: { seconds: 1_767_225_600 },
          managedFields: [{ manager: "m", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { Raw: Buffer.from('{"f:reason":{}}') } }],
        },
        reason: "Started",
        eventTime: { seconds: 1_767_225_600, nanos: 123_456_789 },
        count: 0,
      }),
    );
    expect(event).toEqual({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "e", creationTimestamp: "2026-01-01T00:00:00Z", managedFields: [{ manager: "m", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:reason": {} } }] },
      reason: "Started",
      eventTime: "2026-01-01T00:00:00.123456Z",
    });
    const service = decodeProtobufBody(envelope("v1", "Service", "k8s.io.api.core.v1.Service", { metadata: { name: "s" }, spec: { ports: [{ port: 80, targetPort: { type: 1, strVal: "http" } }] } }));
    expect(service).toEqual({ apiVersion: "v1", kind: "Service", metadata: { name: "s" }, spec: { ports: [{ port: 80, targetPort: "http" }] } });
  });

  it.each([
    { name: "empty", bytes: Buffer.alloc(0), message: "the request body is empty" },
    { name: "no prefix", bytes: Buffer.from('{"kind":"Namespace"}'), message: 'the body of the request could not be decoded as application/vnd.kubernetes.protobuf: it does not start with the "k8s\\0" prefix' },
  ])("a malformed body ($name) is a 400", ({ bytes, message }) => {
    expect(() => decodeProtobufBody(bytes)).toThrow(expect.objectContaining({ code: 400, message }));
  });

  it("a truncated body is a 400 naming the envelope", async () => {
    const { body } = await captureCreate(["create", "configmap", "cut", "--from-literal=a=b"]);
    expect(() => decodeProtobufBody(body.subarray(0, body.length - 3))).toThrow(expect.objectContaining({ code: 400, message: expect.stringMatching(/^the body of the request could not be decoded as application\/vnd\.kubernetes\.protobuf: /) }));
  });

  it("an encoded envelope (contentEncoding) is a 415", async () => {
    const { body } = await captureCreate(["create", "namespace", "enc"]);
    const Unknown = new protobuf.Type("Unknown").add(new protobuf.Field("contentEncoding", 3, "string"));
    const encoded = Buffer.concat([body, Unknown.encode({ contentEncoding: "gzip" }).finish()]);
    expect(() => decodeProtobufBody(encoded)).toThrow(expect.objectContaining({ code: 415, message: expect.stringContaining('Namespace body: contentEncoding "gzip" is not supported') }));
  });
});

describe("kubectl against the simulated cluster", () => {
  let t: TestCluster;
  beforeAll(async () => {
    t = await startTestCluster();
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
  });
  const getJson = async (...args: string[]) => JSON.parse(await kubectl(t, "get", ...args, "-o", "json")) as Record<string, any>;

  it("creates, scales, labels and annotates what it sends as protobuf, and reads it back", { timeout: 90_000 }, async () => {
    expect(await kubectl(t, "create", "namespace", "proto")).toBe("namespace/proto created\n");
    const ns = ["-n", "proto"];
    expect(await kubectl(t, ...ns, "create", "configmap", "c", "--from-literal=a=b")).toBe("configmap/c created\n");
    expect(await kubectl(t, ...ns, "create", "secret", "generic", "s", "--from-literal=a=b")).toBe("secret/s created\n");
    expect(await kubectl(t, ...ns, "run", "p", "--image=nginx", "--port=80")).toBe("pod/p created\n");
    expect(await kubectl(t, ...ns, "expose", "pod", "p", "--port=80", "--target-port=8080")).toBe("service/p exposed\n");
    expect(await kubectl(t, ...ns, "create", "deployment", "d", "--image=nginx", "--port=8080")).toBe("deployment.apps/d created\n");
    expect(await kubectl(t, ...ns, "scale", "deployment", "d", "--replicas=2")).toBe("deployment.apps/d scaled\n");
    expect(await kubectl(t, ...ns, "label", "configmap", "c", "team=a")).toBe("configmap/c labeled\n");
    expect(await kubectl(t, ...ns, "annotate", "secret", "s", "note=b")).toBe("secret/s annotated\n");
    expect(await kubectl(t, ...ns, "create", "service", "clusterip", "web", "--tcp=80:8080")).toBe("service/web created\n");
    expect(await kubectl(t, ...ns, "debug", "p", "--copy-to=p-copy", "--image=busybox", "--container=debug")).toBe("");

    expect((await getJson("namespace", "proto")).status.phase).toBe("Active");
    const configMap = await getJson(...ns, "configmap", "c");
    expect(configMap.data).toEqual({ a: "b" });
    expect(configMap.metadata.labels).toEqual({ team: "a" });
    const secret = await getJson(...ns, "secret", "s");
    expect(secret.data).toEqual({ a: "Yg==" });
    expect(secret.type).toBe("Opaque");
    expect(secret.metadata.annotations).toEqual({ note: "b" });
    expect((await getJson(...ns, "pod", "p")).spec.containers[0].image).toBe("nginx");
    expect((await getJson(...ns, "service", "p")).spec.ports).toEqual([{ port: 80, protocol: "TCP", targetPort: 8080 }]);
    expect((await getJson(...ns, "service", "web")).spec.ports).toEqual([{ name: "80-8080", port: 80, protocol: "TCP", targetPort: 8080 }]);
    const deployment = await getJson(...ns, "deployment", "d");
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.template.spec.containers[0]).toMatchObject({ name: "nginx", image: "nginx", ports: [{ containerPort: 8080, protocol: "TCP" }] });
    await waitFor("the deployment's two pods", async () => (await getJson(...ns, "pods", "-l", "app=d")).items.length === 2);
    const copy = await getJson(...ns, "pod", "p-copy");
    expect(copy.spec.containers.map((c: { image: string }) => c.image)).toEqual(["nginx", "busybox"]);
  });

  it("answers a protobuf kind it cannot decode with a 415 kubectl prints", async () => {
    // kubectl sends a Job only to jobs, which the simulator does not serve (404 before any body is read);
    // its real bytes posted to a served path show the 415 as a client gets it.
    const { body } = await captureCreate(["create", "job", "j", "--image=busybox"]);
    const response = await fetch(`${t.cluster.url}/api/v1/namespaces/default/configmaps`, { method: "POST", headers: { "Content-Type": PROTOBUF_CONTENT_TYPE }, body: new Uint8Array(body) });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ kind: "Status", code: 415, reason: "UnsupportedMediaType", message: expect.stringContaining("cannot decode Job (batch/v1)") });
  });
});
