/**
 * Tier 1: which GCE resources no stack owns are this cluster's, and which of them dccm can prove it
 * made (leaks/classify.ts): one row per rule, the Event text, and fast-check properties of the two
 * promises gc relies on.
 */
import * as assert from "node:assert/strict";
import * as fc from "fast-check";
import {
  classifyLeaks,
  leakCounts,
  leakMessage,
  loadBalancerFamily,
  type ClusterFacts,
  type Leak,
  type LeakConfig,
  type LedgerEntry,
} from "../../../leaks/classify";
import {
  clusterDescription,
  describedOwner,
  loadBalancerName,
  ownedDescription,
  ROUTE_DESCRIPTION,
  serviceDescription,
  type OwnerMarker,
} from "../../../model";
import { RESOURCE_KINDS, resourceId, type ResourceKind, type ObservedResource } from "../../../gce/resources";

const CLUSTER_ID = "c0ffee1234";
const CLUSTER_UID = "c1a55e00-0000-4000-8000-000000000001";
const CONFIG: LeakConfig = {
  clusterId: CLUSTER_ID,
  clusterUid: CLUSTER_UID,
  clusterName: "kubernetes-prod",
  configureRoutes: true,
};
/** This cluster's dccm; the same cluster under a mistyped clusterId; another cluster under ours. */
const OURS_MARKER: OwnerMarker = { clusterId: CLUSTER_ID, clusterUid: CLUSTER_UID };
const MISTYPED: OwnerMarker = { clusterId: "other02", clusterUid: CLUSTER_UID };
const OTHER_CLUSTER: OwnerMarker = { clusterId: CLUSTER_ID, clusterUid: "0dd0dd00-0000-4000-8000-000000000002" };
const owned = (description: string, owner: OwnerMarker = OURS_MARKER): string => ownedDescription(description, owner);
const OUR_DCCM = `this cluster's dccm (clusterId ${CLUSTER_ID}, kube-system UID ${CLUSTER_UID})`;
const NO_MARKER = (description: string): string =>
  `its description ${JSON.stringify(description)} carries no owner marker of ${OUR_DCCM}: the stock CCM, another controller or a dccm older than the marker may have made it`;
const OTHER_MARKER = (owner: OwnerMarker): string =>
  `its description names dccm of clusterId ${owner.clusterId} (kube-system UID ${owner.clusterUid}) as its maker, not ${OUR_DCCM}`;
const PROVEN_LB = (service: string): string =>
  `its description carries the owner marker of ${OUR_DCCM} and names Service ${service}`;
const STILL_EXISTS =
  " (the Service still exists: if its load balancer uses this, deleting it takes that down until dccm creates it again)";
const PROVEN_CLUSTER = `named for cluster ${CLUSTER_ID} and its description carries the owner marker of ${OUR_DCCM}`;
const REGION = "us-central1";

const WEB_UID = "3f6e1d2a-8b4c-4d5e-9f01-23456789abcd";
const GONE_UID = "9a8b7c6d-5e4f-4321-8fed-cba987654321";
const STOCK_UID = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
const TEAM_B_UID = "77777777-8888-4999-aaaa-bbbbbbbbbbbb";
const NODE_UID = "12345678-9abc-4def-8123-456789abcdef";
const WEB_LB = "a3f6e1d2a8b4c4d5e9f0123456789abc";
const GONE_LB = loadBalancerName(GONE_UID);
const STOCK_LB = loadBalancerName(STOCK_UID);
const TEAM_B_LB = loadBalancerName(TEAM_B_UID);
/** A load balancer name no Service of this cluster has: another cluster's Service. */
const ELSEWHERE_LB = "a0123456789abcdef0123456789abcde";

const LEDGER: ReadonlyMap<string, LedgerEntry> = new Map([
  [WEB_LB, { clusterId: CLUSTER_ID, service: "default/web", uid: WEB_UID }],
  [GONE_LB, { clusterId: CLUSTER_ID, service: "default/gone", uid: GONE_UID }],
  // Another dccm of this cluster (its own clusterId and backend) reports its own.
  [TEAM_B_LB, { clusterId: "beef0000", service: "default/team-b", uid: TEAM_B_UID }],
]);

const CLUSTER: ClusterFacts = {
  services: new Map([
    ["default/web", { uid: WEB_UID, foreign: false }],
    ["default/stock", { uid: STOCK_UID, foreign: false }],
    ["default/team-b", { uid: TEAM_B_UID, foreign: true }],
  ]),
  nodes: new Map([[NODE_UID, "node-1"]]),
};

function res(kind: ResourceKind, scope: string, name: string, description: string): ObservedResource {
  return { kind, scope, name, description };
}

const WEB = serviceDescription("default/web");
const GONE = serviceDescription("default/gone");
const OURS = clusterDescription(CLUSTER_ID);

interface Row {
  rule: string;
  resource: ObservedResource;
  owned?: boolean;
  /** undefined: not a leak (owned, or nothing ties it to this cluster). */
  expect?: Pick<Leak, "proof" | "why">;
}

const ROWS: Row[] = [
  {
    rule: "a resource a stack owns is never a leak",
    resource: res("forwardingRules", REGION, WEB_LB, WEB),
    owned: true,
  },
  {
    rule: "a cluster resource a stack owns is never a leak",
    resource: res("instanceGroups", "us-central1-a", `k8s-ig--${CLUSTER_ID}`, OURS),
    owned: true,
  },
  {
    rule: "our owner marker + description naming a Service: proven (the Service still exists)",
    resource: res("forwardingRules", REGION, `${WEB_LB}-udp`, owned(WEB)),
    expect: { proof: "proven", why: PROVEN_LB("default/web") + STILL_EXISTS },
  },
  {
    rule: "our owner marker on a deleted Service's address: proven",
    resource: res("addresses", REGION, GONE_LB, owned(GONE)),
    expect: { proof: "proven", why: PROVEN_LB("default/gone") },
  },
  {
    rule: "every name of the load balancer's family is covered: the health check firewall",
    resource: res("firewalls", "global", `k8s-${GONE_LB}-http-hc`, owned(GONE)),
    expect: { proof: "proven", why: PROVEN_LB("default/gone") },
  },
  {
    rule: "our owner marker proves without a ledger entry (the name is a Service's of this cluster)",
    resource: res("forwardingRules", REGION, STOCK_LB, owned(serviceDescription("default/stock"))),
    expect: { proof: "proven", why: PROVEN_LB("default/stock") + STILL_EXISTS },
  },
  {
    rule: "the stock CCM's resource under a name our ledger records, its description naming the same Service, no marker: unproven",
    resource: res("backendServices", REGION, WEB_LB, WEB),
    expect: {
      proof: "unproven",
      why: `dccm's ledger records load balancer ${WEB_LB} for Service default/web, but ${NO_MARKER(WEB)}`,
    },
  },
  {
    rule: "ledger entry, no description: unproven",
    resource: res("backendServices", REGION, `${WEB_LB}-tcp`, ""),
    expect: {
      proof: "unproven",
      why: `dccm's ledger records load balancer ${WEB_LB} for Service default/web, but ${NO_MARKER("")}`,
    },
  },
  {
    rule: "made by this cluster's dccm under a mistyped clusterId: unproven",
    resource: res("forwardingRules", REGION, GONE_LB, owned(GONE, MISTYPED)),
    expect: {
      proof: "unproven",
      why: `dccm's ledger records load balancer ${GONE_LB} for Service default/gone, but ${OTHER_MARKER(MISTYPED)}`,
    },
  },
  {
    rule: "made by another cluster's dccm under our clusterId (a copied config): unproven",
    resource: res("firewalls", "global", `k8s-fw-${GONE_LB}`, owned(GONE, OTHER_CLUSTER)),
    expect: {
      proof: "unproven",
      why: `dccm's ledger records load balancer ${GONE_LB} for Service default/gone, but ${OTHER_MARKER(OTHER_CLUSTER)}`,
    },
  },
  {
    rule: "named for our cluster ID, our owner marker: proven",
    resource: res("instanceGroups", "us-central1-c", `k8s-ig--${CLUSTER_ID}`, owned(OURS)),
    expect: { proof: "proven", why: PROVEN_CLUSTER },
  },
  {
    rule: "the node health check firewall named for our cluster ID, our owner marker: proven",
    resource: res("firewalls", "global", `k8s-${CLUSTER_ID}-node-http-hc`, owned(OURS)),
    expect: { proof: "proven", why: PROVEN_CLUSTER },
  },
  {
    rule: "named and described for our cluster ID without the marker (an older dccm's, or a copy): unproven",
    resource: res("instanceGroups", "us-central1-b", `k8s-ig--${CLUSTER_ID}`, OURS),
    expect: { proof: "unproven", why: `named for cluster ${CLUSTER_ID}, but ${NO_MARKER(OURS)}` },
  },
  {
    rule: "named for our cluster ID, described the stock CCM's way: unproven",
    resource: res("httpHealthChecks", "global", `k8s-${CLUSTER_ID}-node`, serviceDescription(`k8s-${CLUSTER_ID}-node`)),
    expect: {
      proof: "unproven",
      why: `named for cluster ${CLUSTER_ID}, but ${NO_MARKER(serviceDescription(`k8s-${CLUSTER_ID}-node`))}`,
    },
  },
  {
    rule: "named for our cluster ID, marked by another cluster's dccm: unproven",
    resource: res("healthChecks", REGION, `k8s-${CLUSTER_ID}-node`, owned(OURS, OTHER_CLUSTER)),
    expect: { proof: "unproven", why: `named for cluster ${CLUSTER_ID}, but ${OTHER_MARKER(OTHER_CLUSTER)}` },
  },
  {
    rule: "another cluster ID's instance group: not this cluster's",
    resource: res("instanceGroups", "us-central1-a", "k8s-ig--0ther", clusterDescription("0ther")),
  },
  {
    rule: "the mistyped clusterId's instance group: not named for ours, never ours to delete",
    resource: res("instanceGroups", "us-central1-a", "k8s-ig--other02", owned(clusterDescription("other02"), MISTYPED)),
  },
  {
    rule: "a numbered instance group named for our cluster ID, our owner marker: proven",
    resource: res("instanceGroups", "us-central1-a", `k8s-ig2--${CLUSTER_ID}`, owned(OURS)),
    expect: { proof: "proven", why: PROVEN_CLUSTER },
  },
  {
    rule: "another cluster ID's numbered instance group: not this cluster's",
    resource: res("instanceGroups", "us-central1-a", "k8s-ig2--0ther", clusterDescription("0ther")),
  },
  {
    rule: "named for a Service of this cluster that dccm has no ledger entry for: unproven (the stock CCM's?)",
    resource: res("forwardingRules", REGION, STOCK_LB, serviceDescription("default/stock")),
    expect: {
      proof: "unproven",
      why: `named for Service default/stock of this cluster, but dccm's ledger has no entry for load balancer ${STOCK_LB}: another controller (the stock CCM, for one) may have made it`,
    },
  },
  {
    rule: "another dccm's load balancer (other clusterId in the ledger, other class): not ours to report",
    resource: res("forwardingRules", REGION, TEAM_B_LB, serviceDescription("default/team-b")),
  },
  {
    rule: "a look-alike: a load balancer name nothing here has, described for a Service of this cluster: unproven",
    resource: res("forwardingRules", REGION, ELSEWHERE_LB, WEB),
    expect: {
      proof: "unproven",
      why: `its description names Service default/web of this cluster, but ${ELSEWHERE_LB} is not that Service's load balancer name and dccm's ledger has no entry for it: a Service of the same name in another cluster looks the same`,
    },
  },
  {
    rule: "a load balancer of another cluster's Service this cluster does not have: not this cluster's",
    resource: res("forwardingRules", REGION, ELSEWHERE_LB, serviceDescription("default/nowhere")),
  },
  {
    rule: "a name of no load balancer shape, described for a Service here: not this cluster's",
    resource: res("forwardingRules", REGION, "my-own-rule", WEB),
  },
  {
    rule: "a route named for a Node of this cluster: unproven (routes name no cluster)",
    resource: res("routes", "global", `kubernetes-prod-${NODE_UID}`, ROUTE_DESCRIPTION),
    expect: {
      proof: "unproven",
      why: "named for Node node-1 of this cluster, but a route's name and description name no cluster, so dccm cannot prove it made it",
    },
  },
  {
    rule: "a route named for a Node this cluster does not have: not this cluster's",
    resource: res("routes", "global", "kubernetes-prod-00000000-0000-4000-8000-000000000000", ROUTE_DESCRIPTION),
  },
  {
    rule: "a route of another description: not this cluster's",
    resource: res("routes", "global", `kubernetes-prod-${NODE_UID}`, "my route"),
  },
];

describe("leaks/classify: one row per rule", () => {
  for (const row of ROWS) {
    it(row.rule, () => {
      const owned = new Set(row.owned === true ? [resourceId(row.resource)] : []);
      const leaks = classifyLeaks([row.resource], owned, LEDGER, CLUSTER, CONFIG);
      assert.deepEqual(
        leaks.map((leak) => ({ proof: leak.proof, why: leak.why })),
        row.expect === undefined ? [] : [row.expect],
      );
    });
  }

  it("the load balancer name of the fixture Service is the stock CCM's (a + UID without dashes, 32 characters)", () => {
    assert.equal(loadBalancerName(WEB_UID), WEB_LB);
  });

  it("routes are not looked at when dccm does not configure routes", () => {
    const route = res("routes", "global", `kubernetes-prod-${NODE_UID}`, ROUTE_DESCRIPTION);
    assert.deepEqual(classifyLeaks([route], new Set(), LEDGER, CLUSTER, { ...CONFIG, configureRoutes: false }), []);
  });

  it("a ledger entry written under another clusterId proves nothing for ours", () => {
    const ledger = new Map([[GONE_LB, { clusterId: "0ther", service: "default/gone", uid: GONE_UID }]]);
    assert.deepEqual(classifyLeaks([res("addresses", REGION, GONE_LB, GONE)], new Set(), ledger, CLUSTER, CONFIG), []);
  });

  it("the ledger alone proves nothing: the stock CCM's internal load balancer of a Service our ledger records is unproven, all of it", () => {
    const stock = [
      res("forwardingRules", REGION, WEB_LB, WEB),
      res("backendServices", REGION, WEB_LB, WEB),
      res("firewalls", "global", `k8s-fw-${WEB_LB}`, WEB),
    ];
    assert.deepEqual(
      classifyLeaks(stock, new Set(), LEDGER, CLUSTER, CONFIG).map((leak) => [resourceId(leak.resource), leak.proof]),
      [
        [`forwardingRules/${REGION}/${WEB_LB}`, "unproven"],
        [`backendServices/${REGION}/${WEB_LB}`, "unproven"],
        [`firewalls/global/k8s-fw-${WEB_LB}`, "unproven"],
      ],
    );
  });

  it("all rows at once: sorted in deletion order (users first), then scope and name", () => {
    const leaks = classifyLeaks(
      ROWS.map((row) => row.resource),
      new Set(ROWS.filter((row) => row.owned === true).map((row) => resourceId(row.resource))),
      LEDGER,
      CLUSTER,
      CONFIG,
    );
    assert.deepEqual(
      leaks.map((leak) => resourceId(leak.resource)),
      [
        `forwardingRules/${REGION}/${ELSEWHERE_LB}`,
        `forwardingRules/${REGION}/${GONE_LB}`,
        `forwardingRules/${REGION}/${STOCK_LB}`,
        `forwardingRules/${REGION}/${STOCK_LB}`,
        `forwardingRules/${REGION}/${WEB_LB}-udp`,
        `backendServices/${REGION}/${WEB_LB}`,
        `backendServices/${REGION}/${WEB_LB}-tcp`,
        `healthChecks/${REGION}/k8s-${CLUSTER_ID}-node`,
        `httpHealthChecks/global/k8s-${CLUSTER_ID}-node`,
        `addresses/${REGION}/${GONE_LB}`,
        `instanceGroups/us-central1-a/k8s-ig2--${CLUSTER_ID}`,
        `instanceGroups/us-central1-b/k8s-ig--${CLUSTER_ID}`,
        `instanceGroups/us-central1-c/k8s-ig--${CLUSTER_ID}`,
        `firewalls/global/k8s-${GONE_LB}-http-hc`,
        `firewalls/global/k8s-${CLUSTER_ID}-node-http-hc`,
        `firewalls/global/k8s-fw-${GONE_LB}`,
        `routes/global/kubernetes-prod-${NODE_UID}`,
      ].sort(
        (a, b) =>
          RESOURCE_KINDS.indexOf(a.split("/")[0] as ResourceKind) -
            RESOURCE_KINDS.indexOf(b.split("/")[0] as ResourceKind) || a.localeCompare(b),
      ),
    );
    assert.deepEqual(
      leakCounts(leaks).filter((count) => count.count > 0),
      [
        { kind: "forwardingRules", proof: "proven", count: 2 },
        { kind: "forwardingRules", proof: "unproven", count: 3 },
        { kind: "backendServices", proof: "unproven", count: 2 },
        { kind: "healthChecks", proof: "unproven", count: 1 },
        { kind: "httpHealthChecks", proof: "unproven", count: 1 },
        { kind: "addresses", proof: "proven", count: 1 },
        { kind: "instanceGroups", proof: "proven", count: 2 },
        { kind: "instanceGroups", proof: "unproven", count: 1 },
        { kind: "firewalls", proof: "proven", count: 2 },
        { kind: "firewalls", proof: "unproven", count: 1 },
        { kind: "routes", proof: "unproven", count: 1 },
      ],
    );
    assert.equal(leakCounts(leaks).length, RESOURCE_KINDS.length * 2);
  });
});

describe("leaks/classify: the IPv6 twins (-ipv6) of a load balancer", () => {
  const names: [ResourceKind, string][] = [
    ["addresses", `${GONE_LB}-ipv6`],
    ["forwardingRules", `${GONE_LB}-ipv6`],
    ["forwardingRules", `${GONE_LB}-udp-ipv6`],
    ["firewalls", `k8s-fw-${GONE_LB}-ipv6`],
    ["firewalls", `k8s-${GONE_LB}-http-hc-ipv6`],
  ];
  for (const [kind, name] of names) {
    it(`${kind}/${name}: in the family, proven by our owner marker`, () => {
      assert.ok(loadBalancerFamily(GONE_LB).some(([k, n]) => k === kind && n === name));
      const scope = kind === "firewalls" ? "global" : REGION;
      assert.deepEqual(
        classifyLeaks([res(kind, scope, name, owned(GONE))], new Set(), LEDGER, CLUSTER, CONFIG).map((leak) => [
          leak.proof,
          leak.why,
        ]),
        [["proven", PROVEN_LB("default/gone")]],
      );
    });
  }
  it("a backend service has no IPv6 twin: both families share it", () => {
    assert.equal(
      loadBalancerFamily(GONE_LB).some(([kind, name]) => kind === "backendServices" && name.endsWith("-ipv6")),
      false,
    );
  });
});

describe("leaks/classify: a Service's zonal NEGs (<lb>, <lb>-<8 hex> in another subnetwork)", () => {
  for (const name of [GONE_LB, `${GONE_LB}-0a1b2c3d`]) {
    it(`networkEndpointGroups/us-central1-a/${name}: proven by our owner marker, unproven without it`, () => {
      assert.deepEqual(
        classifyLeaks(
          [res("networkEndpointGroups", "us-central1-a", name, owned(GONE))],
          new Set(),
          LEDGER,
          CLUSTER,
          CONFIG,
        ).map((leak) => [leak.proof, leak.why]),
        [["proven", PROVEN_LB("default/gone")]],
      );
      assert.deepEqual(
        classifyLeaks(
          [res("networkEndpointGroups", "us-central1-a", name, GONE)],
          new Set(),
          LEDGER,
          CLUSTER,
          CONFIG,
        ).map((leak) => leak.proof),
        ["unproven"],
      );
    });
  }
  it("the default subnetwork's NEG is in the family; another subnetwork's is known by its shape only", () => {
    assert.deepEqual(
      loadBalancerFamily(GONE_LB).filter(([kind]) => kind === "networkEndpointGroups"),
      [["networkEndpointGroups", GONE_LB]],
    );
  });
});

describe("leaks/classify: the deny rules of enableL4DenyFirewall (k8s-fw-<lb>-deny, -deny-ipv6)", () => {
  for (const name of [`k8s-fw-${GONE_LB}-deny`, `k8s-fw-${GONE_LB}-deny-ipv6`]) {
    it(`firewalls/${name}: in the family, proven by our owner marker, unproven without it`, () => {
      assert.ok(loadBalancerFamily(GONE_LB).some(([k, n]) => k === "firewalls" && n === name));
      assert.deepEqual(
        classifyLeaks([res("firewalls", "global", name, owned(GONE))], new Set(), LEDGER, CLUSTER, CONFIG).map(
          (leak) => [leak.proof, leak.why],
        ),
        [["proven", PROVEN_LB("default/gone")]],
      );
      assert.deepEqual(
        classifyLeaks([res("firewalls", "global", name, GONE)], new Set(), LEDGER, CLUSTER, CONFIG).map(
          (leak) => leak.proof,
        ),
        ["unproven"],
      );
    });
  }
});

describe("leaks/classify: the Warning event's message", () => {
  const leak = (kind: ResourceKind, name: string, proof: Leak["proof"]): Leak => ({
    resource: res(kind, REGION, name, ""),
    proof,
    why: "w",
  });

  it("counts, then each resource with its proof", () => {
    assert.equal(
      leakMessage([leak("forwardingRules", "a1", "proven"), leak("addresses", "a1", "unproven")]),
      "2 GCE resources of this cluster owned by no stack (1 proven, 1 unproven; dccm gc --dry-run says why, dccm gc deletes only proven ones): " +
        "forwardingRules/us-central1/a1 (proven), addresses/us-central1/a1 (unproven)",
    );
    assert.equal(
      leakMessage([leak("targetPools", "a2", "proven")]),
      "1 GCE resource of this cluster owned by no stack (1 proven, 0 unproven; dccm gc --dry-run says why, dccm gc deletes only proven ones): targetPools/us-central1/a2 (proven)",
    );
  });

  it("cut to 1024 characters, saying how many more there are", () => {
    const many = Array.from({ length: 40 }, (_, i) =>
      leak("forwardingRules", `${WEB_LB.slice(0, 30)}${String(i).padStart(2, "0")}`, "proven"),
    );
    const message = leakMessage(many);
    assert.ok(message.length <= 1024, `${message.length}`);
    const shown =
      message
        .split(": ")[1]
        ?.split(", ")
        .filter((item) => item.endsWith("(proven)")).length ?? 0;
    assert.ok(message.endsWith(`… and ${40 - shown} more`), message.slice(-40));
    assert.equal(shown, 12);
    assert.ok(message.endsWith("(proven), … and 28 more"));
  });
});

describe("leaks/classify: properties (fast-check)", () => {
  const uids = [WEB_UID, GONE_UID, STOCK_UID, TEAM_B_UID, "deadbeef-0000-4000-8000-000000000000"];
  const lbs = uids.map(loadBalancerName);
  const keys = ["default/web", "default/gone", "default/stock", "default/team-b", "kube-system/dns"];
  const ids = [CLUSTER_ID, "0ther"];

  const nameArb = fc.oneof(
    fc.constantFrom(...lbs).chain((lb) => fc.constantFrom(...loadBalancerFamily(lb).map(([, name]) => name))),
    fc
      .constantFrom(...ids)
      .chain((id) => fc.constantFrom(`k8s-ig--${id}`, `k8s-ig2--${id}`, `k8s-${id}-node`, `k8s-${id}-node-http-hc`)),
    fc.constantFrom(`kubernetes-prod-${NODE_UID}`, ELSEWHERE_LB, `${ELSEWHERE_LB}-udp`, `k8s-fw-${ELSEWHERE_LB}`),
    fc.stringMatching(/^[a-z][-a-z0-9]{0,40}$/),
  );
  const jsonDescriptionArb = fc.oneof(
    fc.constantFrom(...ids).map(clusterDescription),
    fc.constantFrom(...keys).map(serviceDescription),
    fc.constant("{}"),
  );
  const ownerArb = fc.constantFrom(OURS_MARKER, MISTYPED, OTHER_CLUSTER, {
    clusterId: "0ther",
    clusterUid: OTHER_CLUSTER.clusterUid,
  });
  const descriptionArb = fc.oneof(
    jsonDescriptionArb,
    fc.tuple(jsonDescriptionArb, ownerArb).map(([description, owner]) => owned(description, owner)),
    fc.constantFrom(
      "",
      ROUTE_DESCRIPTION,
      '{"kubernetes.io/service-name":',
      "null",
      '{"dccm.io/cluster-id":"c0ffee1234"}',
    ),
    fc.string(),
  );
  const resourceArb = fc.record({
    kind: fc.constantFrom(...RESOURCE_KINDS),
    scope: fc.constantFrom(REGION, "us-central1-a", "global"),
    name: nameArb,
    description: descriptionArb,
  });
  const ledgerArb = fc
    .array(
      fc.record({
        lb: fc.constantFrom(...lbs, ELSEWHERE_LB),
        clusterId: fc.constantFrom(...ids),
        service: fc.constantFrom(...keys),
        uid: fc.constantFrom(...uids),
      }),
    )
    .map(
      (entries) =>
        new Map(
          entries.map((entry) => [entry.lb, { clusterId: entry.clusterId, service: entry.service, uid: entry.uid }]),
        ),
    );
  const clusterArb = fc
    .record({
      services: fc.array(
        fc.record({ key: fc.constantFrom(...keys), uid: fc.constantFrom(...uids), foreign: fc.boolean() }),
      ),
      nodes: fc.boolean(),
    })
    .map(({ services, nodes }): ClusterFacts => ({
      services: new Map(services.map((service) => [service.key, { uid: service.uid, foreign: service.foreign }])),
      nodes: new Map(nodes ? [[NODE_UID, "node-1"]] : []),
    }));
  const worldArb = fc.record({
    resources: fc.array(resourceArb, { maxLength: 30 }),
    ownedMask: fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
    ledger: ledgerArb,
    cluster: clusterArb,
  });

  /** The proof, written out plainly: our owner marker (clusterId and cluster UID) in the description. */
  function hasProof(resource: ObservedResource): boolean {
    const owner = describedOwner(resource.description);
    return owner?.clusterId === CLUSTER_ID && owner.clusterUid === CLUSTER_UID;
  }

  it("never classifies as proven a resource whose description lacks our owner marker", () => {
    fc.assert(
      fc.property(worldArb, ({ resources, ledger, cluster }) => {
        for (const leak of classifyLeaks(resources, new Set(), ledger, cluster, CONFIG)) {
          if (leak.proof === "proven")
            assert.ok(
              hasProof(leak.resource),
              `${resourceId(leak.resource)} ${JSON.stringify(leak.resource.description)}`,
            );
        }
      }),
      { numRuns: 500 },
    );
  });

  it("a resource a stack owns is never a leak, whatever else is true of it", () => {
    fc.assert(
      fc.property(worldArb, ({ resources, ownedMask, ledger, cluster }) => {
        const owned = new Set(resources.filter((_, i) => ownedMask[i] === true).map(resourceId));
        for (const leak of classifyLeaks(resources, owned, ledger, cluster, CONFIG))
          assert.ok(!owned.has(resourceId(leak.resource)), resourceId(leak.resource));
      }),
      { numRuns: 500 },
    );
  });

  it("the ledger proves nothing: the proven leaks are the same whatever it holds", () => {
    fc.assert(
      fc.property(worldArb, ({ resources, ledger, cluster }) => {
        const proven = (entries: ReadonlyMap<string, LedgerEntry>): string[] =>
          classifyLeaks(resources, new Set(), entries, cluster, CONFIG)
            .filter((leak) => leak.proof === "proven")
            .map((leak) => resourceId(leak.resource));
        assert.deepEqual(proven(ledger), proven(new Map()));
      }),
      { numRuns: 300 },
    );
  });
});
