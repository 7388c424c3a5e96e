// Errors as the Compute API reports them: HTTP status, reason, message, and Google's JSON body.

import type { JsonObject } from "./json";

const REASONS: Readonly<Record<number, string>> = {
  400: "invalid",
  401: "required",
  403: "forbidden",
  404: "notFound",
  409: "alreadyExists",
  412: "conditionNotMet",
  429: "rateLimitExceeded",
  500: "backendError",
  503: "backendError",
};

/** An error as the Compute API reports it: HTTP status, reason, message. */
export class GceError extends Error {
  readonly status: number;
  readonly reason: string;

  constructor(status: number, message: string, reason?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "GceError";
    this.status = status;
    this.reason = reason ?? REASONS[status] ?? "backendError";
  }

  /** The JSON body Google returns: `{"error":{"code","message","errors":[{"reason"}]}}`. */
  toBody(): JsonObject {
    return {
      error: {
        code: this.status,
        message: this.message,
        errors: [{ reason: this.reason }],
      },
    };
  }
}

export function notFound(path: string): GceError {
  return new GceError(404, `The resource '${path}' was not found`, "notFound");
}
