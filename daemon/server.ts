/** /healthz, /readyz and /metrics. */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import type * as prom from "prom-client";

export interface ProbeServer {
  address: AddressInfo;
  close(): Promise<void>;
}

export async function startProbeServer(host: string, port: number, registry: prom.Registry, ready: () => boolean): Promise<ProbeServer> {
  const server = http.createServer((request, response) => {
    const url = request.url ?? "/";
    if (url === "/healthz") {
      response.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    } else if (url === "/readyz") {
      const isReady = ready();
      response.writeHead(isReady ? 200 : 503, { "content-type": "text/plain" }).end(isReady ? "ok\n" : "not ready\n");
    } else if (url === "/metrics") {
      registry.metrics().then(
        (body) => response.writeHead(200, { "content-type": registry.contentType }).end(body),
        (error: unknown) => response.writeHead(500).end(String(error)),
      );
    } else {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    address: server.address() as AddressInfo,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // close() alone waits for keep-alive and in-flight connections (a scraper's), without bound.
        server.closeAllConnections();
      }),
  };
}
