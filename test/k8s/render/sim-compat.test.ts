// The engine simulator (what `berth up` runs for engine images) must read every engine argv
// the renderer produces, with the degrees berth meant. `$(VAR)` references are expanded as
// the kubelet does before the process starts.
import { describe, expect, it } from "vitest";
import { renderDeployment } from "../../../k8s/render/index.ts";
import { parseEngineCommand } from "../../../src/sim/args.ts";
import { argvOf, SHAPES } from "./support.ts";

const expand = (token: string) => token.replaceAll("$(BERTH_LEADER_ADDRESS)", "10.0.0.1").replaceAll("$(BERTH_POD_IP)", "10.0.0.2");

/** The engine command inside a pod's argv (the elastic leader wraps it in `sh -c … exec "$@"`). */
function engineArgv(argv: string[]): string[] | undefined {
  const start = argv.findIndex((token, i) => (token === "vllm" && argv[i + 1] === "serve") || (token === "python3" && argv[i + 2] === "sglang.launch_server"));
  return start < 0 ? undefined : argv.slice(start).map(expand);
}

const cases = SHAPES.flatMap(({ file, input }) =>
  renderDeployment(input).pods.flatMap((pod) => {
    const argv = engineArgv(argvOf(pod));
    return argv ? [[`${file} ${pod.metadata!.name}`, argv, input.deployment.spec, pod] as const] : [];
  }),
);

describe("simulator compatibility", () => {
  it.each(cases)("%s parses with the intended settings", (_name, argv, spec, pod) => {
    const engine = parseEngineCommand(argv);
    const role = spec.roles.find((r) => r.name === pod.metadata!.labels!["berth.dev/role"])!;
    const member = Number(pod.metadata!.labels!["berth.dev/member"]);
    expect(engine.flavour).toBe(spec.engine.name);
    expect(engine.servedModelNames).toEqual([spec.model.name]);
    expect(engine.host).toBe("0.0.0.0");
    expect(engine.tensorParallel).toBe(role.parallelism.tensor);
    if (role.elastic) expect(engine).toMatchObject({ dataParallel: role.elastic.width, dataParallelBackend: "ray", enableElasticEp: true });
    if (spec.engine.name === "vllm" && role.parallelism.externalDP && role.parallelism.dataLocal === 1) expect(engine.dataParallelRank).toBe(member);
    if (spec.engine.name === "vllm") expect(engine.headless).toBe(pod.metadata!.labels!["berth.dev/serving"] === "false");
    if (spec.engine.name === "sglang") expect(engine.enableMetrics).toBe(true);
    if (role.kind === "prefill" || role.kind === "decode") {
      if (spec.engine.name === "sglang") expect(engine.disaggregationMode).toBe(role.kind);
      else expect(engine.kvTransfer).toEqual({ kv_connector: "NixlConnector", kv_role: "kv_both" });
    }
  });
});
