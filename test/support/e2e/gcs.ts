/**
 * A GCS bucket for gs:// Pulumi state, offline: fake-gcs-server (from .testenv/bin, built by
 * scripts/testenv) on 127.0.0.1, in memory, with one bucket whose object versioning is on, as
 * production state buckets should be. The pulumi CLI reaches it through gocloud.dev's gcsblob,
 * which honours STORAGE_EMULATOR_HOST (plain HTTP, no auth); it still resolves credentials first,
 * and GOOGLE_OAUTH_ACCESS_TOKEN set to any value satisfies that (pkg/authhelpers/gcpauth.go).
 * dccm's own reader of the bucket (stacks/gcs.ts) honours STORAGE_EMULATOR_HOST the same way.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { requireTestenvBinary } from "../tooling/testenv-paths";
import { freePorts, ManagedProcess, waitUntil } from "./kube";

export const E2E_BUCKET = "dccm-e2e-state";

export interface FakeGcs {
  /** `127.0.0.1:<port>`, the value of STORAGE_EMULATOR_HOST. */
  host: string;
  bucket: string;
  /** What the pulumi CLI and dccm's reader need to reach the bucket. */
  env: Record<string, string>;
  /** `gs://<bucket>/<prefix>`. */
  backendUrl(prefix: string): string;
  stop(): Promise<void>;
}

/** Starts fake-gcs-server with logs in `logDir` and creates the versioned bucket. */
export async function startFakeGcs(logDir: string): Promise<FakeGcs> {
  const bin = requireTestenvBinary("fake-gcs-server");
  const [port] = await freePorts(1);
  const host = `127.0.0.1:${port}`;
  fs.mkdirSync(logDir, { recursive: true });
  // Without -public-host, object downloads answer 404 ("object doesn't exist" from `pulumi stack ls`).
  const args = [
    "-scheme",
    "http",
    "-host",
    "127.0.0.1",
    "-port",
    String(port),
    "-public-host",
    host,
    "-backend",
    "memory",
    "-log-level",
    "warn",
  ];
  const proc = await ManagedProcess.start("fake-gcs-server", bin, args, logDir);
  try {
    await waitUntil(
      proc,
      Date.now() + 60_000,
      "answered its bucket listing",
      async () => (await fetch(`http://${host}/storage/v1/b?project=dccm-e2e`)).ok,
    );
    const created = await fetch(`http://${host}/storage/v1/b?project=dccm-e2e`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: E2E_BUCKET, versioning: { enabled: true } }),
    });
    if (!created.ok)
      throw new Error(
        `creating bucket ${E2E_BUCKET} on fake-gcs-server: HTTP ${created.status} ${await created.text()}`,
      );
    const bucket = (await (await fetch(`http://${host}/storage/v1/b/${E2E_BUCKET}`)).json()) as {
      versioning?: { enabled?: boolean };
    };
    if (bucket.versioning?.enabled !== true)
      throw new Error(`bucket ${E2E_BUCKET} on fake-gcs-server has no object versioning: ${JSON.stringify(bucket)}`);
  } catch (error) {
    await proc.terminate(5_000);
    throw error;
  }
  return {
    host,
    bucket: E2E_BUCKET,
    env: { STORAGE_EMULATOR_HOST: host, GOOGLE_OAUTH_ACCESS_TOKEN: "fake-gcs-server-needs-no-token" },
    backendUrl: (prefix) => `gs://${E2E_BUCKET}/${prefix}`,
    stop: () => proc.terminate(5_000),
  };
}

/** Where startFakeGcs keeps its logs under a test environment's directory. */
export function fakeGcsLogDir(dir: string): string {
  return path.join(dir, "fake-gcs-server");
}
