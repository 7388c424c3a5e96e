/** /healthz, /readyz, /metrics and /status: GET and HEAD only, nothing else on this listener. */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import type * as prom from "prom-client";
import type { StatusDocument } from "../controllers/status";

export interface ProbeServer {
  address: AddressInfo;
  close(): Promise<void>;
}

const PATHS = new Set(["/healthz", "/readyz", "/metrics", "/status"]);
const ALLOWED_METHODS = "GET, HEAD";

function reply(
  request: http.IncomingMessage,
  response: http.ServerResponse,
  status: number,
  headers: http.OutgoingHttpHeaders,
  body: string,
): void {
  // HEAD gets the headers GET would, and no body (node drops it, but say so).
  response.writeHead(status, headers).end(request.method === "HEAD" ? undefined : body);
}

/**
 * `status`: the daemon's view of its stacks (controllers/status.ts), built only from what it learns
 * while it runs (no stack config, no backend URL); its error messages are those its Events carry.
 */
export async function startProbeServer(
  host: string,
  port: number,
  registry: prom.Registry,
  ready: () => boolean,
  status: () => StatusDocument,
): Promise<ProbeServer> {
  const server = http.createServer((request, response) => {
    // The query string does not select anything; a probe with `?verbose` still gets its answer.
    const pathname = (request.url ?? "/").split("?")[0];
    const text = { "content-type": "text/plain" };
    if (!PATHS.has(pathname)) {
      reply(request, response, 404, text, "not found\n");
      return;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      reply(request, response, 405, { ...text, allow: ALLOWED_METHODS }, "method not allowed\n");
      return;
    }
    if (pathname === "/healthz") {
      reply(request, response, 200, text, "ok\n");
    } else if (pathname === "/readyz") {
      const isReady = ready();
      reply(request, response, isReady ? 200 : 503, text, isReady ? "ok\n" : "not ready\n");
    } else if (pathname === "/status") {
      reply(request, response, 200, { "content-type": "application/json" }, `${JSON.stringify(status())}\n`);
    } else {
      registry.metrics().then(
        (body) => reply(request, response, 200, { "content-type": registry.contentType }, body),
        (error: unknown) => reply(request, response, 500, text, `${String(error)}\n`),
      );
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
