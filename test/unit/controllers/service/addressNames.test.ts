/** readRegionalAddress: addresses.get by name in the region, as ingress-gce's GetRegionAddress. */
import * as assert from "node:assert/strict";
import { readRegionalAddress } from "../../../../controllers/service/addressNames";

const WHERE = { project: "dccm-test", region: "us-central1" };

describe("readRegionalAddress", () => {
  it("reads addresses.get by name in the region, keeping only the fields the check reads", async () => {
    const calls: string[] = [];
    const compute = {
      getResource: (call: string, path: string): Promise<unknown> => {
        calls.push(`${call} ${path}`);
        return Promise.resolve({
          name: "web-v6",
          address: "2600:1900:4000:1::",
          ipVersion: "IPV6",
          kind: "compute#address",
        });
      },
    };
    assert.deepStrictEqual(await readRegionalAddress(compute, WHERE, "web-v6"), {
      name: "web-v6",
      address: "2600:1900:4000:1::",
      ipVersion: "IPV6",
    });
    assert.deepStrictEqual(calls, ["addresses.get projects/dccm-test/regions/us-central1/addresses/web-v6"]);
  });
  it("is undefined when GCE has no such address (404)", async () => {
    const compute = { getResource: (): Promise<unknown> => Promise.resolve(undefined) };
    assert.equal(await readRegionalAddress(compute, WHERE, "nope"), undefined);
  });
});
