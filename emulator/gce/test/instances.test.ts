// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: alias IP ranges, secondary ranges and instance statuses (instances.ts, networks.ts).
import * as assert from "node:assert/strict";

import type { JsonObject } from "../json";
import { GceError } from "../errors";
import type { NetworkSpec } from "../networks";
import { GceState } from "../state";
import { ENDPOINT, PROJECT, REGION } from "./rulesFixtures";

describe("GCE emulator rules: alias IP ranges, secondary ranges, instance statuses (one row per rule)", () => {
  const ZONE = `${REGION}-a`;
  const vpc: NetworkSpec = {
    name: "vpc-native",
    autoCreateSubnetworks: false,
    subnetworks: [
      {
        name: "nodes",
        ipCidrRange: "10.10.0.0/20",
        secondaryIpRanges: [
          { rangeName: "pods", ipCidrRange: "10.4.0.0/14" },
          { rangeName: "services", ipCidrRange: "10.8.0.0/20" },
        ],
      },
    ],
  };
  function vpcWorld(): GceState {
    return new GceState({ endpoint: ENDPOINT, project: PROJECT, region: REGION, zones: [ZONE], networks: [vpc] });
  }
  const withAlias = (ipCidrRange: string, subnetworkRangeName?: string) => ({
    networkInterfaces: [
      {
        network: "vpc-native",
        aliasIpRanges: [subnetworkRangeName === undefined ? { ipCidrRange } : { ipCidrRange, subnetworkRangeName }],
      },
    ],
  });
  const invalid = (message: string) => (err: unknown) =>
    err instanceof GceError && err.status === 400 && err.message === message;

  it("an alias range from a secondary range is on the interface as given, with its range name", () => {
    const state = vpcWorld();
    const nics = state.putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pods")).properties
      .networkInterfaces as JsonObject[];
    assert.deepEqual(nics[0]?.aliasIpRanges, [{ ipCidrRange: "10.4.1.0/24", subnetworkRangeName: "pods" }]);
  });
  it("an alias range from the primary range has no range name; one address is a /32", () => {
    const state = vpcWorld();
    const nics = state.putInstance(PROJECT, ZONE, "n1", withAlias("10.10.8.9")).properties
      .networkInterfaces as JsonObject[];
    assert.deepEqual(nics[0]?.aliasIpRanges, [{ ipCidrRange: "10.10.8.9/32" }]);
  });
  it("a range name the subnet does not have is refused", () =>
    assert.throws(
      () => vpcWorld().putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pod")),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].subnetworkRangeName': 'pod'. Subnetwork 'nodes' has no secondary range of that name.",
      ),
    ));
  it("a range outside its secondary range is refused", () =>
    assert.throws(
      () => vpcWorld().putInstance(PROJECT, ZONE, "n1", withAlias("10.8.1.0/24", "pods")),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange': '10.8.1.0/24'. It is not within secondary range 'pods' 10.4.0.0/14 of subnetwork 'nodes'.",
      ),
    ));
  it("a range wider than its secondary range is refused", () =>
    assert.throws(
      () => vpcWorld().putInstance(PROJECT, ZONE, "n1", withAlias("10.8.0.0/12", "services")),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange': '10.8.0.0/12'. It is not within secondary range 'services' 10.8.0.0/20 of subnetwork 'nodes'.",
      ),
    ));
  it("a range overlapping another instance's alias range is refused; re-seeding the same instance is not a clash", () => {
    const state = vpcWorld();
    state.putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pods"));
    state.putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pods"));
    assert.throws(
      () => state.putInstance(PROJECT, ZONE, "n2", withAlias("10.4.1.128/25", "pods")),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange': '10.4.1.128/25'. It overlaps alias range 10.4.1.0/24 of instance 'n1'.",
      ),
    );
  });
  it("a primary-range alias holding the interface's own address is refused", () =>
    assert.throws(
      () =>
        vpcWorld().putInstance(PROJECT, ZONE, "n1", {
          networkInterfaces: [
            { network: "vpc-native", networkIP: "10.10.0.5", aliasIpRanges: [{ ipCidrRange: "10.10.0.0/29" }] },
          ],
        }),
      invalid(
        "Invalid value for field 'resource.networkInterfaces[0].aliasIpRanges[0].ipCidrRange': '10.10.0.0/29'. It overlaps the interface's address 10.10.0.5.",
      ),
    ));
  it("secondary ranges overlapping the primary range or each other, or sharing a name, are a test error", () => {
    const state = vpcWorld();
    const sub = (secondaryIpRanges: { rangeName: string; ipCidrRange: string }[]): NetworkSpec => ({
      name: "bad",
      autoCreateSubnetworks: false,
      subnetworks: [{ name: "s", ipCidrRange: "10.20.0.0/20", secondaryIpRanges }],
    });
    assert.throws(() => state.putNetwork(sub([{ rangeName: "a", ipCidrRange: "10.20.4.0/24" }])), {
      message: "putNetwork: subnetwork s: secondary range a (10.20.4.0/24) overlaps 10.20.0.0/20",
    });
    assert.throws(
      () =>
        state.putNetwork(
          sub([
            { rangeName: "a", ipCidrRange: "10.32.0.0/14" },
            { rangeName: "b", ipCidrRange: "10.33.0.0/16" },
          ]),
        ),
      { message: "putNetwork: subnetwork s: secondary range b (10.33.0.0/16) overlaps 10.32.0.0/14" },
    );
    assert.throws(
      () =>
        state.putNetwork(
          sub([
            { rangeName: "a", ipCidrRange: "10.32.0.0/14" },
            { rangeName: "a", ipCidrRange: "10.40.0.0/14" },
          ]),
        ),
      { message: 'putNetwork: subnetwork s: secondary range name "a" must be a unique RFC 1035 name' },
    );
  });
  it("an instance status outside Compute's enum is refused; a stop keeps the interfaces and changes the status only", () => {
    const state = vpcWorld();
    assert.throws(
      () => state.putInstance(PROJECT, ZONE, "n1", { status: "STOPPED_BY_USER" }),
      invalid(
        "Invalid value for field 'resource.status': 'STOPPED_BY_USER'. Expected one of PROVISIONING, STAGING, RUNNING, STOPPING, STOPPED, SUSPENDING, SUSPENDED, REPAIRING, TERMINATED, DEPROVISIONING.",
      ),
    );
    const before = state.putInstance(PROJECT, ZONE, "n1", withAlias("10.4.1.0/24", "pods"));
    const after = state.setInstanceStatus(PROJECT, ZONE, "n1", "TERMINATED");
    assert.deepEqual(after.properties, { ...before.properties, status: "TERMINATED" });
    assert.throws(
      () => state.setInstanceStatus(PROJECT, ZONE, "gone", "RUNNING"),
      (err: unknown) => err instanceof GceError && err.status === 404,
    );
  });
});
