/**
 * A TCP proxy in front of the test apiserver that can be turned into a blackhole: connections stay
 * open and new ones are accepted, but no byte goes through in either direction and nothing is
 * closed or reset. That is what a cut network looks like to a client (unlike a refused or reset
 * connection, which fails its request at once).
 */
import * as net from "node:net";
import * as k8s from "@kubernetes/client-node";

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
}

export class BlackholeProxy {
  private server: net.Server | undefined;
  private readonly pairs = new Set<Pair>();
  private holes = false;
  port = 0;

  constructor(private readonly targetPort: number) {}

  async open(): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  /** A kubeconfig like `kubeconfigPath`'s whose current cluster is reached through this proxy. */
  kubeConfig(kubeconfigPath: string): k8s.KubeConfig {
    const viaProxy = new k8s.KubeConfig();
    viaProxy.loadFromFile(kubeconfigPath);
    const cluster = viaProxy.getCurrentCluster();
    if (cluster === null) throw new Error(`${kubeconfigPath}: no current cluster`);
    viaProxy.clusters = viaProxy.clusters.map((entry) =>
      entry.name === cluster.name ? { ...entry, server: `https://127.0.0.1:${this.port}` } : entry,
    );
    return viaProxy;
  }

  /** From now on nothing is forwarded; open connections hang, new ones are accepted and hang. */
  blackhole(): void {
    this.holes = true;
    for (const pair of this.pairs) this.swallow(pair);
  }

  /** Closes everything (for after()). */
  async close(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    const server = this.server;
    this.server = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    client.on("error", () => client.destroy());
    if (this.holes) {
      // Accepted (so no connection error) and read (so the sender never blocks), never answered.
      client.resume();
      this.pairs.add({ client, upstream: new net.Socket() });
      return;
    }
    const upstream = net.connect(this.targetPort, "127.0.0.1");
    upstream.on("error", () => upstream.destroy());
    const pair = { client, upstream };
    this.pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const forget = (): void => {
      if (this.holes) return;
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", forget);
    upstream.on("close", forget);
  }

  private swallow({ client, upstream }: Pair): void {
    client.unpipe(upstream);
    upstream.unpipe(client);
    // The apiserver side goes away quietly; the client side keeps its connection and hears nothing.
    upstream.destroy();
    client.resume();
  }
}
