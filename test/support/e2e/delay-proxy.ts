/**
 * An HTTP proxy in front of the GCE emulator that holds chosen requests for a while, the way a
 * real GCE create keeps the engine waiting (silent) for seconds. The emulator itself answers at
 * once; the proxy only adds time, never changes a request or an answer.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";

export interface DelayProxy {
  /** `http://127.0.0.1:PORT`: use as DCCM_GCE_EMULATOR_URL. */
  readonly url: string;
  /** Resolves when a held request arrives. */
  held(): Promise<void>;
  /**
   * Forwards every request held now, at once: a slow GCE operation completes after all, even when
   * the client that sent it has given up (its answer then goes nowhere).
   */
  release(): void;
  close(): Promise<void>;
}

export async function startDelayProxy(
  target: string,
  hold: (method: string, path: string) => number,
): Promise<DelayProxy> {
  const waiters: (() => void)[] = [];
  /** Held requests: their timer and what forwards them. */
  const timers = new Map<NodeJS.Timeout, () => void>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const forward = (): void => {
        const upstream = http.request(
          new URL(request.url ?? "/", target),
          { method: request.method, headers: request.headers },
          (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(response);
          },
        );
        upstream.on("error", () => response.destroy());
        // The client may be gone (released late): its answer is dropped.
        response.on("error", () => undefined);
        upstream.end(Buffer.concat(chunks));
      };
      const ms = hold(request.method ?? "GET", request.url ?? "/");
      if (ms <= 0) {
        forward();
        return;
      }
      for (const resolve of waiters.splice(0)) resolve();
      const timer = setTimeout(() => {
        timers.delete(timer);
        forward();
      }, ms);
      timers.set(timer, forward);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    held: () => new Promise<void>((resolve) => waiters.push(resolve)),
    release: () => {
      for (const [timer, forward] of [...timers]) {
        clearTimeout(timer);
        timers.delete(timer);
        forward();
      }
    },
    close: async () => {
      for (const timer of timers.keys()) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
