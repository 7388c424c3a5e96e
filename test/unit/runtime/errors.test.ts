import * as assert from "node:assert/strict";
import { ApiException } from "@kubernetes/client-node";
import { describeError } from "../../../runtime/errors";

describe("runtime/errors: describeError", () => {
  it("gives an apiserver error's status and message, never its raw body", () => {
    const body = JSON.stringify({
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      message:
        "Service \"web\" is invalid: status.loadBalancer: Forbidden: may only be used when `spec.type` is 'LoadBalancer'",
      code: 422,
    });
    const error = new Error("writing status.loadBalancer of Service default/web", {
      cause: new ApiException(
        422,
        `HTTP-Code: 422\nMessage: Unknown API Status Code!\nBody: ${body}\nHeaders: {}`,
        body,
        {},
      ),
    });
    assert.equal(
      describeError(error),
      "writing status.loadBalancer of Service default/web: HTTP 422: Service \"web\" is invalid: status.loadBalancer: Forbidden: may only be used when `spec.type` is 'LoadBalancer'",
    );
  });
});
