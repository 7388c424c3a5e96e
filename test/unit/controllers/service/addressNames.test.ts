/**
 * readRegionalAddress: addresses.get by name in the region, as ingress-gce's GetRegionAddress;
 * AddressNameReader: which Services still wait for a read, and the one amend of the observation a read makes.
 */
import * as assert from "node:assert/strict";
import { AddressNameReader, readRegionalAddress } from "../../../../controllers/service/addressNames";
import type { NamedAddress } from "../../../../model/addressNames";

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

describe("AddressNameReader", () => {
  const ANNOTATION = "networking.gke.io/load-balancer-ip-addresses";
  const V4: NamedAddress = { name: "web-v4", address: "34.1.2.3" };

  function reader(annotations: Record<string, unknown> | undefined, gce: Record<string, unknown>) {
    const calls: string[] = [];
    let observed: Readonly<Record<string, NamedAddress | null>> | undefined = { other: null };
    const amends: Readonly<Record<string, NamedAddress | null>>[] = [];
    const subject = new AddressNameReader({
      compute: {
        getResource: (_call: string, path: string): Promise<unknown> => {
          calls.push(path);
          const answer = gce[path.slice(path.lastIndexOf("/") + 1)];
          return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
        },
      },
      where: WHERE,
      annotations: () => annotations,
      observed: () => observed,
      amend: (next) => {
        amends.push(next);
        observed = next;
      },
    });
    return { subject, calls, amends };
  }

  const pending: [string, Record<string, unknown> | undefined, boolean][] = [
    ["no annotation", {}, false],
    ["the Service is gone", undefined, false],
    ["a malformed value (the model refuses it)", { [ANNOTATION]: "Web" }, false],
    ["a name not read", { [ANNOTATION]: "web-v4" }, true],
    ["a name GCE had not when read", { [ANNOTATION]: "other" }, true],
  ];
  for (const [what, annotations, want] of pending)
    it(`pending: ${what} → ${want}`, () =>
      assert.equal(reader(annotations, {}).subject.pending("default", "web"), want));

  it("reads each name, then amends the observation once, over what it held", async () => {
    const { subject, calls, amends } = reader({ [ANNOTATION]: " web-v4 , gone" }, { "web-v4": V4 });
    await subject.read("default", "web");
    assert.deepStrictEqual(calls, [
      "projects/dccm-test/regions/us-central1/addresses/web-v4",
      "projects/dccm-test/regions/us-central1/addresses/gone",
    ]);
    assert.deepStrictEqual(amends, [{ other: null, "web-v4": V4, gone: null }]);
    assert.equal(subject.pending("default", "web"), true, "gone is read again at the next sync");
  });

  it("a failed read amends nothing and names the Service, the annotation and the address", async () => {
    const { subject, amends } = reader({ [ANNOTATION]: "web-v4" }, { "web-v4": new Error("503 backendError") });
    await assert.rejects(subject.read("default", "web"), {
      message:
        "Service default/web: metadata.annotations[networking.gke.io/load-balancer-ip-addresses]: reading address web-v4: 503 backendError",
    });
    assert.deepStrictEqual(amends, []);
  });
});
