// Child process for the watch test: follow the event stream while the garbage collector
// runs often, abort, and end by itself. It would hang if the abort depended on undici
// passing the Request's signal on (that link is lost once the Request is collected).
import { createBerthClient } from "../../../../clients/typescript/src/index.ts";

const client = createBerthClient({ baseUrl: process.env.BERTH_URL!, token: process.env.BERTH_TOKEN! });
const stop = new AbortController();
const collect = (globalThis as { gc?: () => void }).gc;
const collecting = setInterval(() => collect?.(), 20);
setTimeout(() => {
  stop.abort();
  clearInterval(collecting);
}, 800);
for await (const event of client.streamEvents({ after: 1_000_000_000, signal: stop.signal })) {
  console.log("unexpected event", event.seq);
}
console.log(collect ? "ended (gc exposed)" : "ended");
