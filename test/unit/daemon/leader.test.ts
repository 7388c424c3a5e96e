/**
 * LeaderElector against a minimal Lease endpoint over plain HTTP: leadership ends by the clock at
 * the renew deadline when renew requests hang, not when (or if) they fail.
 */
import * as assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as k8s from "@kubernetes/client-node";
import pino from "pino";
import { LeaderElector, type LeaderOptions } from "../../../daemon/leader";
import { eventually } from "../../support/wait";

const LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/dccm";

interface LeaseServer {
  server: http.Server;
  url: string;
  setHanging(value: boolean): void;
  requests: () => number;
  gets: () => number;
  /** While held, writes wait; un-holding applies them in the order they came. */
  setHoldingWrites(value: boolean): void;
  heldWrites: () => number;
  lease: () => Record<string, unknown> | undefined;
  /** Ends every connection (hung ones too) and closes the server. */
  stop(): Promise<void>;
}

/**
 * Stores one Lease; while `hanging`, reads the request and never answers (a blackholed apiserver).
 * A replace whose metadata.resourceVersion is not the stored one is refused 409, as the apiserver
 * refuses a write based on a stale read (optimistic concurrency).
 */
async function leaseServer(): Promise<LeaseServer> {
  let lease: Record<string, unknown> | undefined;
  let hanging = false;
  let holdingWrites = false;
  const held: Array<() => void> = [];
  let requests = 0;
  let gets = 0;
  let resourceVersion = 1;
  const server = http.createServer((request, response) => {
    requests++;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (hanging) return;
      const send = (status: number, body: unknown): void => {
        response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      };
      const url = request.url ?? "";
      if (request.method === "GET" && url.startsWith(LEASE_PATH)) {
        gets++;
        if (lease === undefined)
          send(404, { kind: "Status", apiVersion: "v1", code: 404, reason: "NotFound", message: "not found" });
        else send(200, lease);
      } else if (
        (request.method === "POST" && url.startsWith(LEASE_PATH.slice(0, LEASE_PATH.lastIndexOf("/")))) ||
        (request.method === "PUT" && url.startsWith(LEASE_PATH))
      ) {
        const write = (): void => {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { metadata?: Record<string, unknown> };
          if (request.method === "PUT" && body.metadata?.resourceVersion !== String(resourceVersion)) {
            send(409, {
              kind: "Status",
              apiVersion: "v1",
              code: 409,
              reason: "Conflict",
              message: "the object has been modified; please apply your changes to the latest version and try again",
            });
            return;
          }
          resourceVersion++;
          lease = {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            ...body,
            metadata: { ...body.metadata, resourceVersion: String(resourceVersion) },
          };
          send(request.method === "POST" ? 201 : 200, lease);
        };
        if (holdingWrites) held.push(write);
        else write();
      } else {
        send(404, { kind: "Status", apiVersion: "v1", code: 404, message: `no route ${request.method} ${url}` });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setHanging: (value) => {
      hanging = value;
    },
    requests: () => requests,
    gets: () => gets,
    setHoldingWrites: (value) => {
      holdingWrites = value;
      if (!value) for (const write of held.splice(0)) write();
    },
    heldWrites: () => held.length,
    lease: () => lease,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function kubeConfigFor(server: string): k8s.KubeConfig {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "fake", server, skipTLSVerify: true }],
    users: [{ name: "fake", token: "fake-token" }],
    contexts: [{ name: "fake", cluster: "fake", user: "fake" }],
    currentContext: "fake",
  });
  return kubeConfig;
}

/** An elector of the Lease kube-system/dccm on the fake, logging nothing. */
function electorOn(fake: LeaseServer, options: Omit<LeaderOptions, "namespace" | "name">): LeaderElector {
  return new LeaderElector(
    kubeConfigFor(fake.url),
    { namespace: "kube-system", name: "dccm", ...options },
    pino({ level: "silent" }),
  );
}

describe("daemon: LeaderElector renew deadline", function () {
  this.timeout(20_000);

  it("loses leadership by the clock when renews hang, calls onLost once and stops renewing", async () => {
    const fake = await leaseServer();
    const elector = electorOn(fake, {
      identity: "me",
      leaseDurationMs: 3000,
      renewDeadlineMs: 600,
      retryPeriodMs: 100,
      requestTimeoutMs: 5000,
    });
    try {
      const losses: number[] = [];
      await elector.acquire(() => losses.push(Date.now()));
      assert.equal(elector.isLeader(), true);
      // Let a few renews succeed: leadership must survive them.
      const renewedBy = fake.requests() + 6;
      await eventually("three more renews", () => (fake.requests() >= renewedBy ? true : undefined), 5000, 10);
      assert.deepEqual(losses, []);
      const hungAt = Date.now();
      fake.setHanging(true);
      // Each request's own deadline (5 s) is far beyond the renew deadline: only the timer can act in time.
      await eventually("onLost", () => (losses.length > 0 ? true : undefined), 3000, 10);
      assert.equal(losses.length, 1);
      const lostAfter = losses[0] - hungAt;
      assert.equal(lostAfter <= 600 + 100 + 50, true, `lost ${lostAfter} ms after the apiserver hung`);
      assert.equal(elector.isLeader(), false);
      // An absence can only be observed over time: three retry periods with no new request.
      const requestsAtLoss = fake.requests();
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(fake.requests(), requestsAtLoss);
      assert.equal(losses.length, 1);
    } finally {
      await elector.release();
      await fake.stop();
    }
  });

  it("release while a renew's write is in flight: the renew lands first, the release's stale write gets 409, and the Lease is still handed back", async () => {
    const fake = await leaseServer();
    const elector = electorOn(fake, {
      identity: "me",
      leaseDurationMs: 3000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 100,
      requestTimeoutMs: 5000,
    });
    try {
      await elector.acquire(() => undefined);
      fake.setHoldingWrites(true);
      await eventually("a renew's write in flight", () => (fake.heldWrites() === 1 ? true : undefined), 5000, 10);
      const getsBefore = fake.gets();
      const released = elector.release();
      // The release read the Lease before the renew's write lands, and its own write waits behind it.
      await eventually(
        "the release's write held",
        () => (fake.gets() > getsBefore && fake.heldWrites() === 2 ? true : undefined),
        5000,
        10,
      );
      fake.setHoldingWrites(false);
      await released;
      const spec = fake.lease()?.spec as { holderIdentity?: string; leaseDurationSeconds?: number } | undefined;
      assert.deepEqual(
        { holderIdentity: spec?.holderIdentity, leaseDurationSeconds: spec?.leaseDurationSeconds },
        { holderIdentity: "", leaseDurationSeconds: 1 },
      );
    } finally {
      fake.setHoldingWrites(false);
      await elector.release();
      await fake.stop();
    }
  });

  it("a standby is standing by while it reads the Lease another holds, and not once its reads fail", async () => {
    const fake = await leaseServer();
    const options = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 100, requestTimeoutMs: 300 };
    const holder = electorOn(fake, { ...options, identity: "holder" });
    const standby = electorOn(fake, { ...options, identity: "standby" });
    try {
      await holder.acquire(() => undefined);
      assert.equal(standby.isStandingBy(), false);
      let acquired = false;
      void standby.acquire(() => undefined).then(() => (acquired = true));
      await eventually("the standby read the Lease", () => (standby.isStandingBy() ? true : undefined), 5000, 10);
      assert.equal(standby.isLeader(), false);
      assert.equal(holder.isStandingBy(), false);
      fake.setHanging(true);
      await eventually("the standby's reads fail", () => (standby.isStandingBy() ? undefined : true), 5000, 10);
      assert.equal(acquired, false);
    } finally {
      await standby.release();
      fake.setHanging(false);
      await holder.release();
      await fake.stop();
    }
  });
});
