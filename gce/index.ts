// The Compute client: typed surface (types.ts), HTTP transport with auth, deadlines, retries and
// metrics (transport.ts), pure parsing of response bodies (parse.ts), and the calls (client.ts).

export * from "./types";
export { ComputeClient, computeClientFromConfig, type ComputeClientOptions } from "./client";
export {
  computeCallsCounter,
  DEFAULT_RETRY,
  isLoopbackEndpoint,
  type AuthHeaders,
  type RetryPolicy,
} from "./transport";
export { parseQuotas, readProjectQuotas, type ProjectQuotas, type QuotaApi, type QuotaReading } from "./quotas";
