/** stacks/backend.ts: the one rule every command and the daemon find the backend by. */
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { localBackendUrl, resolveBackendUrl, type BackendSources } from "../../../stacks/backend";

describe("stacks/backend resolveBackendUrl", () => {
  const rows: [string, BackendSources, string][] = [
    ["nothing set: file://<stateDir>/backend", { stateDir: "/var/lib/dccm" }, "file:///var/lib/dccm/backend"],
    ["$PULUMI_BACKEND_URL", { env: "gs://env", stateDir: "/s" }, "gs://env"],
    [
      "the config file's key wins over the environment",
      { file: "gs://file", env: "gs://env", stateDir: "/s" },
      "gs://file",
    ],
    ["the flag wins over both", { flag: "gs://flag", file: "gs://file", env: "gs://env", stateDir: "/s" }, "gs://flag"],
    [
      "an empty flag is unset: the file's key",
      { flag: "", file: "gs://file", env: "gs://env", stateDir: "/s" },
      "gs://file",
    ],
    ["an empty key is unset: the environment", { file: "", env: "gs://env", stateDir: "/s" }, "gs://env"],
    ["PULUMI_BACKEND_URL= is unset: the state directory's", { env: "", stateDir: "/s" }, "file:///s/backend"],
    ["all three empty: the state directory's", { flag: "", file: "", env: "", stateDir: "/s" }, "file:///s/backend"],
    ["a trailing slash of the state directory is dropped", { stateDir: "/s/" }, "file:///s/backend"],
    [
      "a relative state directory is made absolute",
      { stateDir: "state" },
      `file://${path.resolve("state", "backend")}`,
    ],
    [
      "a value is taken as written (no trimming, no check)",
      { flag: " https://api.pulumi.com ", stateDir: "/s" },
      " https://api.pulumi.com ",
    ],
  ];
  for (const [name, sources, expected] of rows) it(name, () => assert.equal(resolveBackendUrl(sources), expected));
});

describe("stacks/backend localBackendUrl", () => {
  const rows: [string, string][] = [
    ["/tmp/b", "file:///tmp/b"],
    ["/tmp/b/../c", "file:///tmp/c"],
    ["rel", `file://${path.resolve("rel")}`],
  ];
  for (const [dir, expected] of rows) it(`${dir} → ${expected}`, () => assert.equal(localBackendUrl(dir), expected));
});
