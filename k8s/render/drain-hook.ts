// The engine container's preStop hook: a backstop to the agent's own drain (docs/design.md §5, §7.6).
// It polls the engine's /metrics until running + waiting requests read 0 twice in a row
// (one second apart), the engine stops answering, or the budget runs out — whichever comes
// first — and always exits 0 so the kubelet goes on to SIGTERM. Why python3: both engine
// images ship it (vLLM and SGLang are Python), while curl/wget are not guaranteed; the
// script uses only the standard library. The budget is the grace period minus a margin that
// leaves SIGTERM time to act (SGLang drains on SIGTERM; vLLM aborts whatever is left).
import type { V1Lifecycle } from "@kubernetes/client-node";
import type { EngineName } from "../../src/domain/deployment-spec.ts";

/** The gauges whose sum is "requests still in the engine" (vLLM `vllm/v1/metrics/loggers.py`, SGLang's `sglang:` metrics; docs/design.md §12). */
export const IN_FLIGHT_GAUGES: Readonly<Record<EngineName, readonly string[]>> = {
  vllm: ["vllm:num_requests_running", "vllm:num_requests_waiting"],
  sglang: ["sglang:num_running_reqs", "sglang:num_queue_reqs"],
};

/** Seconds of the grace period kept back for SIGTERM after the hook. */
export const SIGTERM_MARGIN_SECONDS = 5;

// argv: port, budget seconds, comma-separated gauge names. Connection refused means the
// engine is gone: nothing left to wait for. Any other failure (a 503 during an elastic
// resize, a slow answer) is retried until the budget ends.
export const DRAIN_SCRIPT = [
  "import os, re, sys, time, urllib.request, urllib.error",
  "port, budget, names = sys.argv[1], float(sys.argv[2]), set(sys.argv[3].split(','))",
  "host = os.environ.get('BERTH_POD_IP') or '127.0.0.1'",
  "url = 'http://%s:%s/metrics' % ('[%s]' % host if ':' in host else host, port)",
  "sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{[^}]*\\})?\\s+(\\S+)', re.M)",
  "end, zeros = time.monotonic() + budget, 0",
  "while time.monotonic() < end:",
  "    try:",
  "        text = urllib.request.urlopen(url, timeout=3).read().decode('utf-8', 'replace')",
  "        busy = sum(float(v) for n, v in sample.findall(text) if n in names)",
  "        zeros = zeros + 1 if busy == 0 else 0",
  "        if zeros >= 2: break",
  "    except urllib.error.URLError as error:",
  "        if isinstance(error.reason, ConnectionRefusedError): break",
  "    except Exception:",
  "        pass",
  "    time.sleep(1)",
].join("\n");

/** The preStop hook for an engine serving on `port`, or undefined when the grace period leaves no budget. */
export function drainHook(engine: EngineName, port: number, gracePeriodSeconds: number): V1Lifecycle | undefined {
  const budget = gracePeriodSeconds - SIGTERM_MARGIN_SECONDS;
  if (budget <= 0) return undefined;
  return {
    preStop: {
      exec: { command: ["python3", "-c", DRAIN_SCRIPT, String(port), String(budget), IN_FLIGHT_GAUGES[engine].join(",")] },
    },
  };
}
