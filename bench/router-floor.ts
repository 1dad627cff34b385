// The floor of a reverse proxy on node:http, for bench/router.ts: a keep-alive agent, round
// robin over the upstreams given as arguments, headers and body piped through unchanged, and
// nothing else (no parsing, retries, metrics or limits). Prints {"url": …} once listening.
// Usage: node --import tsx bench/router-floor.ts http://127.0.0.1:A http://127.0.0.1:B
import http from "node:http";
import type { AddressInfo } from "node:net";

const upstreams = process.argv.slice(2).map((url) => new URL(url));
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
let next = 0;

const server = http.createServer((req, res) => {
  const upstream = upstreams[next++ % upstreams.length]!;
  const forward = http.request(
    { agent, hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  forward.on("error", () => res.destroy());
  req.pipe(forward);
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}` }) + "\n");
});
process.once("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
