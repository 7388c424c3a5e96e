/**
 * Tier 1: the IPv4 address of a Service that reserves none at rest (controllers/service/addressPins.ts):
 * what a run does with it (addressStep, table and properties), what a stack's outputs say about it
 * (recordedAddress), and the reservation's Compute calls (AddressPinner over a fake ComputeClient).
 */
import * as assert from "node:assert/strict";
import * as fc from "fast-check";

import {
  AddressPinError,
  AddressPinner,
  addressId,
  addressStep,
  publishedIpv4,
  type AddressStep,
  type AddressStepInput,
  type PinCompute,
} from "../../../../controllers/service/addressPins";
import { recordedAddress, type RecordedAddress } from "../../../../components/outputs";
import type { AddressInsert } from "../../../../gce";
import { forwardingRuleShape, reservesTransiently, type ServiceDesired } from "../../../../model";
import { externalServiceDesired } from "../../../support/builders";

const IP = "203.0.113.8";
const OTHER_IP = "203.0.113.99";
const IPV6 = "2600:1900:4000:7f3::";
const LB = "a0b1f2f6e4c1a4d599e0e7c1f9d1c2a3";
const DESCRIPTION = '{"kubernetes.io/service-name":"default/web"}';

/** The Service as the default `transient` mode makes it: one TCP port, no userIP, no life-long reservation. */
const WEB: ServiceDesired = externalServiceDesired("default", "web", "0b1f2f6e-4c1a-4d59-9e0e-7c1f9d1c2a3b", LB, [80]);
const SHAPE = forwardingRuleShape(WEB);
/** The shape recorded before a protocol change TCP → UDP. */
const UDP_SHAPE = forwardingRuleShape({
  ...WEB,
  frontends: [{ name: LB, protocol: "UDP", ports: [80], portSelection: { kind: "ports", ports: ["80"] } }],
});

describe("controllers/service/addressPins: reservesTransiently and publishedIpv4", () => {
  const services: [string, ServiceDesired, boolean][] = [
    ["no userIP, no reservation, IPv4: transient", WEB, true],
    ["a user-owned loadBalancerIP: never ours to reserve", { ...WEB, userIP: IP }, false],
    ["reserveAddress: <lb> for life", { ...WEB, reserveAddress: true }, false],
    ["IPv6 only: no IPv4 address at all", { ...WEB, ipv6Only: true }, false],
  ];
  for (const [what, service, transient] of services)
    it(`reservesTransiently: ${what} → ${String(transient)}`, () =>
      assert.equal(reservesTransiently(service), transient));

  const statuses: [string[], string | undefined][] = [
    [[], undefined],
    [[IP], IP],
    [[IP, IPV6], IP],
    [[IPV6, IP], IP],
    [[IPV6], undefined],
    [[IP, OTHER_IP], undefined],
  ];
  for (const [published, ip] of statuses)
    it(`publishedIpv4(${JSON.stringify(published)}) → ${String(ip)}`, () => assert.equal(publishedIpv4(published), ip));
});

describe("components/outputs: recordedAddress (a Service stack's outputs)", () => {
  const rows: [string, Record<string, unknown>, RecordedAddress][] = [
    ["nothing recorded (a stack never applied)", {}, { holdsAddress: false }],
    ["loadBalancers not an object", { loadBalancers: "x" }, { holdsAddress: false }],
    [
      "another Service's entry only",
      { loadBalancers: { "default/other": { resources: { address: LB }, forwardingRuleShape: SHAPE } } },
      { holdsAddress: false },
    ],
    [
      "an earlier release's stack: <lb> held, no shape recorded",
      { loadBalancers: { "default/web": { ingress: [IP], resources: { address: LB, forwardingRules: [LB] } } } },
      { holdsAddress: true },
    ],
    [
      "a pinned run's outputs: <lb> held and the shape",
      { loadBalancers: { "default/web": { resources: { address: LB }, forwardingRuleShape: SHAPE } } },
      { holdsAddress: true, forwardingRuleShape: SHAPE },
    ],
    [
      "at rest: the shape, no address",
      { loadBalancers: { "default/web": { resources: { forwardingRules: [LB] }, forwardingRuleShape: SHAPE } } },
      { holdsAddress: false, forwardingRuleShape: SHAPE },
    ],
    [
      "a shape that is not a string, an address that is not a name: neither counted",
      { loadBalancers: { "default/web": { resources: { address: 1 }, forwardingRuleShape: { scheme: "EXTERNAL" } } } },
      { holdsAddress: false },
    ],
    [
      "no resources",
      { loadBalancers: { "default/web": { forwardingRuleShape: SHAPE } } },
      { holdsAddress: false, forwardingRuleShape: SHAPE },
    ],
  ];
  for (const [what, outputs, recorded] of rows)
    it(what, () => assert.deepStrictEqual(recordedAddress(outputs, "default", "web"), recorded));
});

describe("controllers/service/addressPins: addressStep (what a run does with the IPv4 address)", () => {
  const AT_REST: RecordedAddress = { holdsAddress: false, forwardingRuleShape: SHAPE };
  const HOLDING: RecordedAddress = { holdsAddress: true, forwardingRuleShape: SHAPE };
  const rows: [string, AddressStepInput, AddressStep][] = [
    [
      "a user-owned loadBalancerIP, holding <lb>, a change of shape: none",
      { service: { ...WEB, userIP: IP }, recorded: HOLDING, published: [IP], change: true },
      { kind: "none" },
    ],
    [
      "reserveAddress (always, or a shared IP), the stack holding <lb>, a change of shape: none",
      { service: { ...WEB, reserveAddress: true }, recorded: { holdsAddress: true }, published: [IP], change: true },
      { kind: "none" },
    ],
    [
      "reserveAddress newly (a second protocol, or always), the stack without <lb>: pin the rule's IP for good (no release)",
      { service: { ...WEB, reserveAddress: true }, recorded: AT_REST, published: [IP], change: true },
      { kind: "pin", ip: IP, release: false },
    ],
    [
      "reserveAddress newly, nothing published (the first run): none (GCE gives <lb> a new IP)",
      { service: { ...WEB, reserveAddress: true }, recorded: { holdsAddress: false }, published: [], change: true },
      { kind: "none" },
    ],
    [
      "a user-owned loadBalancerIP, the stack without <lb>: none",
      { service: { ...WEB, userIP: IP }, recorded: AT_REST, published: [IP], change: true },
      { kind: "none" },
    ],
    [
      "IPv6 only, even holding <lb>: none (its IPv6 address is reserved for life)",
      { service: { ...WEB, ipv6Only: true }, recorded: { holdsAddress: true }, published: [IPV6], change: true },
      { kind: "none" },
    ],
    [
      "the stack holds <lb>, an IPv4 published: release on that IP",
      { service: WEB, recorded: HOLDING, published: [IP], change: false },
      { kind: "release", ip: IP },
    ],
    [
      "the stack holds <lb>, a change of shape too: release on the IP (<lb> holds it all through the run)",
      { service: WEB, recorded: { holdsAddress: true, forwardingRuleShape: UDP_SHAPE }, published: [IP], change: true },
      { kind: "release", ip: IP },
    ],
    [
      "the stack holds <lb>, nothing published: release without an IP",
      { service: WEB, recorded: { holdsAddress: true }, published: [], change: false },
      { kind: "release" },
    ],
    [
      "a change with the same shape: none (no rule is replaced)",
      { service: WEB, recorded: AT_REST, published: [IP], change: true },
      { kind: "none" },
    ],
    [
      "a change with another shape (TCP → UDP), one IPv4 published: pin it",
      {
        service: WEB,
        recorded: { holdsAddress: false, forwardingRuleShape: UDP_SHAPE },
        published: [IP],
        change: true,
      },
      { kind: "pin", ip: IP, release: true },
    ],
    [
      "a change with no shape recorded, one IPv4 published (dual-stack): pin it",
      { service: WEB, recorded: { holdsAddress: false }, published: [IP, IPV6], change: true },
      { kind: "pin", ip: IP, release: true },
    ],
    [
      "a change with another shape, nothing published (the first run): none",
      { service: WEB, recorded: { holdsAddress: false, forwardingRuleShape: UDP_SHAPE }, published: [], change: true },
      { kind: "none" },
    ],
    [
      "a change with another shape, two IPv4 published: none (which one is the rule's is unknown)",
      {
        service: WEB,
        recorded: { holdsAddress: false, forwardingRuleShape: UDP_SHAPE },
        published: [IP, OTHER_IP],
        change: true,
      },
      { kind: "none" },
    ],
    [
      "not a change (a refresh), another shape recorded: none (a repair pins through its plan)",
      {
        service: WEB,
        recorded: { holdsAddress: false, forwardingRuleShape: UDP_SHAPE },
        published: [IP],
        change: false,
      },
      { kind: "none" },
    ],
  ];
  for (const [what, input, step] of rows) it(what, () => assert.deepStrictEqual(addressStep(input), step));

  const ipv4 = fc
    .tuple(fc.integer({ min: 1, max: 223 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }))
    .map(([a, b, c]) => `${a}.${b}.${c}.7`);
  const published = fc.array(fc.oneof(ipv4, fc.constant(IPV6)), { maxLength: 3 });
  const shape = fc.option(fc.constantFrom(SHAPE, UDP_SHAPE, "{}"), { nil: undefined });
  const recorded = fc.tuple(fc.boolean(), shape).map(([holdsAddress, recordedShape]): RecordedAddress => ({
    holdsAddress,
    ...(recordedShape !== undefined ? { forwardingRuleShape: recordedShape } : {}),
  }));

  it("property: a Service with a user IP never pins nor releases", () => {
    const owned = fc.constantFrom<ServiceDesired>(
      { ...WEB, userIP: IP },
      {
        ...WEB,
        userIP: IP,
        frontends: [...WEB.frontends, { ...WEB.frontends[0], name: `${LB}-udp`, protocol: "UDP" }],
      },
    );
    fc.assert(
      fc.property(owned, recorded, published, fc.boolean(), (service, rec, ips, change) => {
        assert.deepStrictEqual(addressStep({ service, recorded: rec, published: ips, change }), { kind: "none" });
      }),
    );
  });

  it("property: a life-long reservation never releases; it pins (for good) only a stack without <lb>, on its one IPv4", () => {
    const reserved: ServiceDesired = { ...WEB, reserveAddress: true };
    fc.assert(
      fc.property(recorded, published, fc.boolean(), (rec, ips, change) => {
        const step = addressStep({ service: reserved, recorded: rec, published: ips, change });
        const ip = publishedIpv4(ips);
        assert.deepStrictEqual(
          step,
          !rec.holdsAddress && ip !== undefined ? { kind: "pin", ip, release: false } : { kind: "none" },
        );
      }),
    );
  });

  it("property: never a pin when the shape applied is the Service's; a pin is always on the one published IPv4", () => {
    fc.assert(
      fc.property(recorded, published, fc.boolean(), (rec, ips, change) => {
        const step = addressStep({ service: WEB, recorded: rec, published: ips, change });
        if (rec.forwardingRuleShape === SHAPE) assert.notEqual(step.kind, "pin");
        if (step.kind === "pin") {
          assert.equal(step.release, true);
          assert.equal(change, true);
          assert.equal(rec.holdsAddress, false);
          assert.deepStrictEqual(
            ips.filter((ip) => !ip.includes(":")),
            [step.ip],
          );
        }
        // A stack holding <lb> always releases it, whatever else the run does.
        assert.equal(step.kind === "release", rec.holdsAddress);
      }),
    );
  });
});

/** A ComputeClient stand-in for the pin's two calls, every call recorded. */
function fakeCompute(
  insert: (address: AddressInsert) => Promise<"created" | "exists">,
  existing?: unknown,
): { compute: PinCompute; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const compute: PinCompute = {
    insertAddress: (project, region, address, opts) => {
      calls.push(["insertAddress", project, region, address, opts]);
      return insert(address);
    },
    getResource: async (call, resourcePath, opts) => {
      calls.push(["getResource", call, resourcePath, opts]);
      return existing;
    },
  };
  return { compute, calls };
}

describe("controllers/service/addressPins: AddressPinner.pin (addresses.insert of <lb> on the rule's IP)", () => {
  const WHERE = { project: "dccm-test", region: "us-central1" };
  const ADDRESS_PATH = `projects/dccm-test/regions/us-central1/addresses/${LB}`;

  it("addressId: the Pulumi resource ID of <lb>", () => {
    assert.equal(addressId("dccm-test", "us-central1", WEB), ADDRESS_PATH);
  });

  it("external: inserted with the literal IP, its tier and description; created → done, nothing read", async () => {
    const signal = new AbortController().signal;
    const { compute, calls } = fakeCompute(async () => "created");
    await new AddressPinner(compute, WHERE, signal).pin(WEB, IP);
    assert.deepStrictEqual(calls, [
      [
        "insertAddress",
        "dccm-test",
        "us-central1",
        { name: LB, address: IP, addressType: "EXTERNAL", description: DESCRIPTION, networkTier: "PREMIUM" },
        { signal },
      ],
    ]);
  });

  it("external Standard tier, no signal: the tier as declared, no call options", async () => {
    const { compute, calls } = fakeCompute(async () => "created");
    await new AddressPinner(compute, WHERE).pin({ ...WEB, networkTier: "STANDARD" }, IP);
    assert.deepStrictEqual(calls, [
      [
        "insertAddress",
        "dccm-test",
        "us-central1",
        { name: LB, address: IP, addressType: "EXTERNAL", description: DESCRIPTION, networkTier: "STANDARD" },
        {},
      ],
    ]);
  });

  it("internal in a subnetwork: purpose SHARED_LOADBALANCER_VIP (as the program declares it), the subnetwork's link, no tier", async () => {
    const { compute, calls } = fakeCompute(async () => "created");
    await new AddressPinner(compute, WHERE).pin({ ...WEB, scheme: "INTERNAL", subnetwork: "ilb-subnet" }, "10.0.0.5");
    assert.deepStrictEqual(calls, [
      [
        "insertAddress",
        "dccm-test",
        "us-central1",
        {
          name: LB,
          address: "10.0.0.5",
          addressType: "INTERNAL",
          description: DESCRIPTION,
          purpose: "SHARED_LOADBALANCER_VIP",
          subnetwork: "projects/dccm-test/regions/us-central1/subnetworks/ilb-subnet",
        },
        {},
      ],
    ]);
  });

  it("internal under a Shared VPC: reserved in project, in the host project's subnetwork", async () => {
    const { compute, calls } = fakeCompute(async () => "created");
    await new AddressPinner(compute, WHERE).pin(
      { ...WEB, scheme: "INTERNAL", subnetwork: "ilb-subnet", networkProject: "vpc-host" },
      "10.0.0.5",
    );
    assert.deepStrictEqual(calls, [
      [
        "insertAddress",
        "dccm-test",
        "us-central1",
        {
          name: LB,
          address: "10.0.0.5",
          addressType: "INTERNAL",
          description: DESCRIPTION,
          purpose: "SHARED_LOADBALANCER_VIP",
          subnetwork: "projects/vpc-host/regions/us-central1/subnetworks/ilb-subnet",
        },
        {},
      ],
    ]);
  });

  it("internal in a subnetwork written as its path: the path as written (as the program declares it)", async () => {
    const { compute, calls } = fakeCompute(async () => "created");
    const path = "projects/vpc-host/regions/us-central1/subnetworks/ilb-subnet";
    await new AddressPinner(compute, WHERE).pin({ ...WEB, scheme: "INTERNAL", subnetwork: path }, "10.0.0.5");
    assert.deepStrictEqual(calls, [
      [
        "insertAddress",
        "dccm-test",
        "us-central1",
        {
          name: LB,
          address: "10.0.0.5",
          addressType: "INTERNAL",
          description: DESCRIPTION,
          purpose: "SHARED_LOADBALANCER_VIP",
          subnetwork: path,
        },
        {},
      ],
    ]);
  });

  it("internal without a subnetwork: the purpose, neither subnetwork nor tier", async () => {
    const { compute, calls } = fakeCompute(async () => "created");
    await new AddressPinner(compute, WHERE).pin({ ...WEB, scheme: "INTERNAL" }, "10.0.0.5");
    assert.deepStrictEqual(calls[0]?.[3], {
      name: LB,
      address: "10.0.0.5",
      addressType: "INTERNAL",
      description: DESCRIPTION,
      purpose: "SHARED_LOADBALANCER_VIP",
    });
  });

  it("<lb> exists with the same IP (an earlier try's reservation): read back, done", async () => {
    const { compute, calls } = fakeCompute(async () => "exists", { name: LB, address: IP, status: "IN_USE" });
    await new AddressPinner(compute, WHERE).pin(WEB, IP);
    assert.deepStrictEqual(
      calls.map((call) => call.slice(0, 3)),
      [
        ["insertAddress", "dccm-test", "us-central1"],
        ["getResource", "addresses.get", ADDRESS_PATH],
      ],
    );
  });

  it("<lb> exists with another IP: AddressPinError naming both IPs", async () => {
    const { compute } = fakeCompute(async () => "exists", { name: LB, address: OTHER_IP });
    await assert.rejects(new AddressPinner(compute, WHERE).pin(WEB, IP), (error: unknown) => {
      assert.ok(error instanceof AddressPinError);
      assert.equal(error.name, "AddressPinError");
      assert.equal(
        error.message,
        `Service default/web: address ${LB} exists with IP ${OTHER_IP}, not the load balancer's ${IP}`,
      );
      return true;
    });
  });

  it("<lb> exists but is gone when read: AddressPinError, the IP undefined", async () => {
    const { compute } = fakeCompute(async () => "exists", undefined);
    await assert.rejects(new AddressPinner(compute, WHERE).pin(WEB, IP), {
      name: "AddressPinError",
      message: `Service default/web: address ${LB} exists with IP undefined, not the load balancer's ${IP}`,
    });
  });

  it("the insert fails (the IP is no rule's any more, a quota): AddressPinError with the Compute error as cause", async () => {
    const refusal = new Error("googleapi: Error 400: IP address 203.0.113.8 is not available");
    const { compute, calls } = fakeCompute(() => Promise.reject(refusal));
    await assert.rejects(new AddressPinner(compute, WHERE).pin(WEB, IP), (error: unknown) => {
      assert.ok(error instanceof AddressPinError);
      assert.equal(
        error.message,
        `Service default/web: could not reserve ${IP} as address ${LB} before a run that may replace its forwarding rule`,
      );
      assert.equal(error.cause, refusal);
      return true;
    });
    assert.equal(calls.length, 1, "nothing read after a failed insert");
  });
});
