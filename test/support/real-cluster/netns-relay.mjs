// Runs inside a test's network namespace and carries TCP across its border through Unix
// sockets, which live in the file system and so are seen from both sides. The test process
// (outside) connects to the control socket and sends one line, then the socket is a pipe:
//
//   CONNECT <host>:<port>\n             → a TCP connection to host:port inside the namespace
//   LISTEN <host>:<port> <unix path>\n  → listen on host:port inside; each connection accepted
//                                          is carried to the Unix socket <unix path> outside.
//                                          The answer is "OK\n" or "ERR <why>\n"; closing the
//                                          control connection closes the listener.
//
// Plain JavaScript so that it starts in a fraction of a second: `node netns-relay.mjs SOCKET`.
import { createConnection, createServer } from "node:net";
import { rmSync } from "node:fs";

const socketPath = process.argv[2];
if (!socketPath) {
  console.error("usage: netns-relay.mjs CONTROL_SOCKET");
  process.exit(2);
}

const MAX_HEADER = 1024;

function parseHostPort(text) {
  const colon = text.lastIndexOf(":");
  const port = Number(text.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  return { host: text.slice(0, colon), port };
}

function pipeBoth(a, b) {
  a.pipe(b);
  b.pipe(a);
  const close = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", close).on("close", close);
  b.on("error", close).on("close", close);
}

function readHeader(socket, onLine) {
  let buffered = Buffer.alloc(0);
  const onData = (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    const end = buffered.indexOf(10);
    if (end < 0) {
      if (buffered.length > MAX_HEADER) socket.destroy();
      return;
    }
    socket.off("data", onData);
    socket.pause();
    const rest = buffered.subarray(end + 1);
    if (rest.length > 0) socket.unshift(rest);
    onLine(buffered.subarray(0, end).toString("utf8").trim());
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
}

function connectInside(client, target) {
  const upstream = createConnection(target);
  upstream.once("connect", () => {
    pipeBoth(client, upstream);
    client.resume();
  });
  upstream.once("error", () => client.destroy());
}

function listenInside(control, target, outsidePath) {
  const listener = createServer((inbound) => {
    const outside = createConnection(outsidePath);
    outside.once("connect", () => pipeBoth(inbound, outside));
    outside.once("error", () => inbound.destroy());
  });
  listener.once("error", (error) => control.end(`ERR ${error.code ?? error.message}\n`));
  listener.listen(target.port, target.host, () => control.write("OK\n"));
  control.resume();
  control.on("data", () => {});
  control.on("close", () => listener.close());
}

rmSync(socketPath, { force: true });
const server = createServer((client) => {
  readHeader(client, (line) => {
    const [verb, address, outsidePath] = line.split(" ");
    const target = address && parseHostPort(address);
    if (!target) return client.end("ERR bad request\n");
    if (verb === "CONNECT") return connectInside(client, target);
    if (verb === "LISTEN" && outsidePath) return listenInside(client, target, outsidePath);
    client.end("ERR bad request\n");
  });
});
server.listen(socketPath, () => console.log("relay ready"));
process.on("SIGTERM", () => process.exit(0));
