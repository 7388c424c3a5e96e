/**
 * Every inline run's engine clients connect through subchannels of their own, and are closed once
 * the run has succeeded.
 *
 * The SDK makes a ResourceMonitorClient and an EngineClient per inline run, in the run's store
 * (@pulumi/pulumi runtime/settings.js getMonitor, getEngine), and closes neither: its
 * disconnectSync closes only the process-wide pair, which inline runs do not use. @grpc/grpc-js
 * shares one subchannel per address and options across the process (subchannel-pool.ts). A run
 * whose program calls its engine after the engine has exited (a failed or cancelled run, a late log
 * line) leaves that subchannel reconnecting with backoff, up to 120 s, to a closed port. When the
 * kernel later gives another run's engine the same ephemeral port, that run's new clients get the
 * failing subchannel, and every call fails at once with `14 UNAVAILABLE: No connection
 * established. Last error: null`. Seen in bench:scale at 2,000 Services, where many runs failed
 * (the emulator's IP pool ran out at the 763rd Service), each leaving such a subchannel behind:
 * svc-926's runs failed with it 14 minutes apart. With a pool per client, a new run always dials
 * its own engine.
 */
import * as sdkSettings from "@pulumi/pulumi/runtime/settings";
import { isRecord } from "../runtime/guards";

/** @grpc/grpc-js's channel option: a subchannel pool of the channel's own instead of the process's. */
export const OWN_SUBCHANNEL_POOL = "grpc.use_local_subchannel_pool";

/**
 * Sets the option on the client options the SDK gives every run's clients (an object of its
 * module, read as each client is made); throws when the SDK no longer has them, so an upgrade that
 * moves them fails its tests instead of bringing the failure back.
 */
export function ownSubchannelsForRuns(settingsModule: unknown = sdkSettings): void {
  const options = isRecord(settingsModule) ? settingsModule.grpcClientOptions : undefined;
  if (!isRecord(options))
    throw new Error(
      "@pulumi/pulumi's runtime/settings exports no grpcClientOptions: inline runs would share gRPC subchannels across engines (stacks/grpcChannels.ts)",
    );
  options[OWN_SUBCHANNEL_POOL] = 1;
}

/** The clients the SDK keeps in a run's settings (runtime/settings.js getMonitor, getEngine). */
export const RUN_CLIENTS = ["monitor", "engine"] as const;

/**
 * Closes the engine clients of one run, kept in its store's settings, and lets go of them. Open,
 * each client's channel keeps its resolver and timers, which Node keeps with the run's async
 * context, the store: the store, the clients and their channels then live for ever (stacks/runStore.ts).
 * Only for a run the SDK has disconnected (its program has returned): a call on a closed client
 * throws. Returns how many it closed.
 */
export function closeRunClients(settings: Record<string, unknown>): number {
  let closed = 0;
  for (const key of RUN_CLIENTS) {
    const client = settings[key];
    settings[key] = undefined;
    if (!isRecord(client) || typeof client.close !== "function") continue;
    (client.close as () => void).call(client);
    closed++;
  }
  return closed;
}
