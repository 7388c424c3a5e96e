/** fast-check generators of Nodes and Services as the watcher gives them: mostly valid, sometimes garbage. */
import * as fc from "fast-check";

import type { NodeInfo, ServiceInfo } from "../../model/types";
import { EXCLUDE, ZONE } from "./builders";

export const FALSE_VALUES = ["0", "f", "F", "false", "FALSE", "False"];
export const zones = fc.constantFrom("us-central1-a", "us-central1-b", "us-central1-c", "");
export const cidr = fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 33 })).map(([ip, prefix]) => `${ip}/${prefix}`);
export const podCidr = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.integer({ min: 64, max: 70 }), fc.integer({ min: 0, max: 255 }))
      .map(([b, c]) => `10.${b}.${c}.0/24`),
  },
  { weight: 1, arbitrary: cidr },
  { weight: 1, arbitrary: fc.constantFrom("fd00::/64", "garbage", "") },
);
// Real Node UIDs are lowercase UUIDs; garbage ones come from hand-written or edited snapshots.
export const nodeUid = fc.oneof(
  { weight: 6, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom("", "AAAAAAAA-0000-4000-8000-000000000001") },
);

export const nodeArb = (name: string): fc.Arbitrary<NodeInfo> =>
  fc
    .record({
      uid: nodeUid,
      provider: fc.constantFrom("gce", "gce", "none", "wrong-project", "garbage", "empty"),
      zone: zones,
      labelZone: fc.option(zones, { nil: undefined }),
      legacyZone: fc.option(zones, { nil: undefined }),
      exclude: fc.option(
        fc.oneof(fc.constantFrom("true", "", "yes", "false", "False", "0", "f", "no"), fc.string({ maxLength: 5 })),
        { nil: undefined },
      ),
      autoscalerTaint: fc.boolean(),
      otherTaint: fc.boolean(),
      deleting: fc.boolean(),
      podCIDRs: fc.array(podCidr, { maxLength: 2 }),
    })
    .map((n): NodeInfo => {
      const labels: Record<string, string> = {};
      if (n.labelZone !== undefined) labels[ZONE] = n.labelZone;
      if (n.legacyZone !== undefined) labels["failure-domain.beta.kubernetes.io/zone"] = n.legacyZone;
      if (n.exclude !== undefined) labels[EXCLUDE] = n.exclude;
      const providerID = {
        gce: `gce://dccm-test/${n.zone}/${name}`,
        none: undefined,
        "wrong-project": `gce://someone-else/${n.zone}/${name}`,
        garbage: `aws:///${n.zone}/${name}`,
        empty: "",
      }[n.provider];
      return {
        name,
        uid: n.uid,
        ...(providerID !== undefined ? { providerID } : {}),
        labels,
        taints: [
          ...(n.autoscalerTaint
            ? [{ key: "ToBeDeletedByClusterAutoscaler", value: "1700000000", effect: "NoSchedule" }]
            : []),
          ...(n.otherTaint ? [{ key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" }] : []),
        ],
        deleting: n.deleting,
        podCIDRs: n.podCIDRs,
      };
    });

export const nodesArb = fc
  .uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/), { maxLength: 8 })
  .chain((names) => (names.length === 0 ? fc.constant([] as NodeInfo[]) : fc.tuple(...names.map(nodeArb))));

/** Mostly valid, sometimes garbage: each Service is accepted often enough for the properties to bite. */
export const mostly = <T, U>(valid: fc.Arbitrary<T>, garbage: fc.Arbitrary<U>): fc.Arbitrary<T | U> =>
  fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: garbage });
export const sometimes = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
  fc.option(arb, { nil: undefined, freq: 2 });
export const annotationsArb = fc
  .record({
    "networking.gke.io/load-balancer-type": sometimes(
      mostly(fc.constantFrom("Internal", "internal", "External"), fc.constantFrom("Private", "")),
    ),
    "cloud.google.com/load-balancer-type": sometimes(
      mostly(fc.constantFrom("Internal", "External"), fc.string({ maxLength: 8 })),
    ),
    "networking.gke.io/internal-load-balancer-subnet": sometimes(
      mostly(fc.constantFrom("ilb-subnet", "other-subnet"), fc.constantFrom("Bad_Subnet", "")),
    ),
    "networking.gke.io/internal-load-balancer-allow-global-access": sometimes(
      mostly(fc.constantFrom("true", "false", "TRUE"), fc.constantFrom("yes", "")),
    ),
    "cloud.google.com/network-tier": sometimes(
      mostly(fc.constantFrom("Premium", "Standard", "standard"), fc.constantFrom("Gold", "")),
    ),
    "service.beta.kubernetes.io/load-balancer-source-ranges": sometimes(
      mostly(
        fc.constantFrom("10.0.0.0/8", "10.0.0.0/8, 192.0.2.0/24", ""),
        fc.constantFrom("2001:db8::/32", "10.0.0.0/8,"),
      ),
    ),
    "dccm.io/backend": sometimes(
      mostly(fc.constantFrom("target-pool", "backend-service"), fc.string({ maxLength: 8 })),
    ),
    "example.com/unrelated": sometimes(fc.string({ maxLength: 12 })),
  })
  .map((record) =>
    Object.fromEntries(Object.entries(record).filter((entry): entry is [string, string] => entry[1] !== undefined)),
  );
export const portArb = fc.record({
  protocol: mostly(
    fc.constantFrom("TCP", "UDP", "TCP", "", "tcp"),
    fc.oneof(fc.constant("SCTP"), fc.string({ maxLength: 5 })),
  ),
  port: mostly(
    fc.integer({ min: 1, max: 65535 }),
    fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constantFrom(0, -1, 65536, 1.5, Number.NaN)),
  ),
});
export const serviceArb = ({ namespace, name }: { namespace: string; name: string }): fc.Arbitrary<ServiceInfo> =>
  fc
    .record({
      uid: mostly(
        fc.uuid(),
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.constantFrom("", "ABCDEF00-0000-4000-8000-000000000000", "0123456789abcdef0123456789abcdef"),
        ),
      ),
      type: mostly(fc.constant("LoadBalancer"), fc.constantFrom("ClusterIP", "NodePort", "")),
      loadBalancerClass: sometimes(fc.constantFrom("dccm.io/gce", "dccm.io/gce", "example.com/other", "")),
      annotations: annotationsArb,
      ports: fc.array(portArb, { minLength: 1, maxLength: 8 }),
      externalTrafficPolicy: sometimes(mostly(fc.constantFrom("Cluster", "Local"), fc.constant("Bogus"))),
      healthCheckNodePort: mostly(fc.integer({ min: 30000, max: 32767 }), fc.constantFrom(undefined, 0, -1, 70000)),
      loadBalancerIP: sometimes(mostly(fc.ipV4(), fc.oneof(fc.string({ maxLength: 15 }), fc.constant("2001:db8::1")))),
      loadBalancerSourceRanges: fc.array(
        mostly(
          cidr.filter((text) => !text.endsWith("/33")),
          fc.oneof(fc.string({ maxLength: 12 }), fc.constant("2001:db8::/32")),
        ),
        { maxLength: 3 },
      ),
      sessionAffinity: sometimes(mostly(fc.constantFrom("None", "ClientIP"), fc.constant("clientip"))),
      deleting: mostly(fc.constant(false), fc.constant(true)),
    })
    .map((s): ServiceInfo => {
      const service: ServiceInfo = {
        namespace,
        name,
        uid: s.uid,
        type: s.type,
        annotations: s.annotations,
        ports: s.ports,
        loadBalancerSourceRanges: s.loadBalancerSourceRanges,
        deleting: s.deleting,
      };
      if (s.loadBalancerClass !== undefined) service.loadBalancerClass = s.loadBalancerClass;
      if (s.externalTrafficPolicy !== undefined) service.externalTrafficPolicy = s.externalTrafficPolicy;
      if (s.healthCheckNodePort !== undefined) service.healthCheckNodePort = s.healthCheckNodePort;
      if (s.loadBalancerIP !== undefined) service.loadBalancerIP = s.loadBalancerIP;
      if (s.sessionAffinity !== undefined) service.sessionAffinity = s.sessionAffinity;
      return service;
    });
export const servicesArb = fc
  .uniqueArray(
    fc.record({
      namespace: fc.constantFrom("default", "kube-system", "db"),
      name: fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/),
    }),
    {
      selector: (key) => `${key.namespace}/${key.name}`,
      maxLength: 8,
    },
  )
  .chain((keys) => (keys.length === 0 ? fc.constant([] as ServiceInfo[]) : fc.tuple(...keys.map(serviceArb))));
