// Service stack names: within Pulumi's stack-name rule for every Service name Kubernetes allows.
import * as assert from "node:assert/strict";
import fc from "fast-check";
import { parseStackKey } from "../../../controllers/reconciler";
import { ServiceStackKeys } from "../../../stacks/stackKeys";
import { emptyRow, StatusBook } from "../../../controllers/status";
import {
  isServiceStack,
  parseServiceKey,
  parseServiceStack,
  serviceKey,
  serviceStackName,
  STACK_NAME_MAX,
  STACK_NAME_PATTERN,
} from "../../../model/names";
import { serviceKeyOutput } from "../../../components/outputs";
import { stackScope } from "../../../model";

/** Kubernetes: a namespace is a DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63). */
const namespaceLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
/** Kubernetes: a Service name is a DNS-1035 label (`[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63). */
const serviceLabel = fc.stringMatching(/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/);
/** Long labels, where shortening happens: 29 to 63 characters. */
const longLabel = (first: string): fc.Arbitrary<string> =>
  fc
    .tuple(
      fc.constantFrom(...first),
      fc.stringMatching(/^[-a-z0-9]{27,61}$/),
      fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789"),
    )
    .map(([a, b, c]) => `${a}${b}${c}`);
const services = fc.oneof(
  fc.tuple(namespaceLabel, serviceLabel),
  fc.tuple(longLabel("abcdefghijklmnopqrstuvwxyz0123456789"), longLabel("abcdefghijklmnopqrstuvwxyz")),
);

const NS63 = "n".repeat(62) + "s";

describe("Service stack names", () => {
  it("are exactly these: readable when they fit in 100 characters, else 75 readable characters, _ and 24 hex digits of the key's SHA-256", () => {
    const table: [string, string, string][] = [
      ["default", "web", "service.default.web"],
      [NS63, "a".repeat(28), `service.${NS63}.${"a".repeat(28)}`],
    ];
    assert.equal(`service.${NS63}.${"a".repeat(28)}`.length, 100);
    for (const [namespace, name, stack] of table) assert.equal(serviceStackName(namespace, name), stack);
    const long = serviceStackName(NS63, "a".repeat(29));
    assert.equal(long, `service.${NS63}.aaa_161658fe615ccf1cccbe79d7`);
    assert.equal(long.length, 100);
  });

  it("every Kubernetes-valid namespace and name: valid for Pulumi, at most 100 characters, a Service stack, stable", () => {
    fc.assert(
      fc.property(services, ([namespace, name]) => {
        const stack = serviceStackName(namespace, name);
        assert.ok(stack.length <= STACK_NAME_MAX, stack);
        assert.match(stack, STACK_NAME_PATTERN);
        assert.equal(serviceStackName(namespace, name), stack);
        assert.ok(isServiceStack(stack), stack);
      }),
      { numRuns: 2000 },
    );
  });

  it("names that fit are unchanged (every existing stack keeps its name) and read back; longer ones are 100 characters, never read as another Service", () => {
    fc.assert(
      fc.property(services, ([namespace, name]) => {
        const readable = `service.${namespace}.${name}`;
        const stack = serviceStackName(namespace, name);
        if (readable.length <= STACK_NAME_MAX) {
          assert.equal(stack, readable);
          assert.deepEqual(parseServiceStack(stack), { namespace, name });
        } else {
          assert.equal(stack.length, STACK_NAME_MAX);
          assert.equal(stack.slice(0, 75), readable.slice(0, 75));
          assert.equal(parseServiceStack(stack), undefined);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("distinct Services get distinct stacks", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(services, {
          selector: ([namespace, name]) => `${namespace}/${name}`,
          minLength: 2,
          maxLength: 200,
        }),
        (keys) => {
          const stacks = new Set(keys.map(([namespace, name]) => serviceStackName(namespace, name)));
          assert.equal(stacks.size, keys.length);
        },
      ),
      { numRuns: 200 },
    );
    // Same 75-character prefix, different keys: told apart by the hash alone.
    assert.notEqual(serviceStackName(NS63, `${"a".repeat(40)}-1`), serviceStackName(NS63, `${"a".repeat(40)}-2`));
  });

  it("isServiceStack: the cluster stack and other names are not Service stacks", () => {
    for (const stack of [
      "cluster",
      "service.a",
      "service.a.b.c",
      `service.${"a".repeat(75)}_${"0".repeat(23)}`,
      "ci",
      `service.${"a".repeat(75)}_${"0".repeat(24)}x`,
    ]) {
      assert.equal(isServiceStack(stack), false, stack);
    }
    assert.equal(isServiceStack(`service.${"a".repeat(75 - 8)}_${"0".repeat(24)}`), true);
  });
});

describe("Service stacks back to their Service", () => {
  const ns = NS63;
  const long = "l".repeat(40);
  const stack = serviceStackName(ns, long);

  it("the program records dccmServiceKey only in a stack whose name is shortened (existing stacks' outputs unchanged)", () => {
    assert.deepEqual(serviceKeyOutput({ kind: "service", namespace: ns, name: long }), {
      dccmServiceKey: `${ns}/${long}`,
    });
    assert.deepEqual(serviceKeyOutput({ kind: "service", namespace: ns, name: "l".repeat(28) }), {});
    assert.deepEqual(serviceKeyOutput({ kind: "service", namespace: "default", name: "web" }), {});
    assert.deepEqual(serviceKeyOutput({ kind: "cluster" }), {});
  });

  it("ServiceStackKeys: a readable name from the name, a shortened one once its Service was seen", () => {
    const keys = new ServiceStackKeys();
    assert.deepEqual(keys.serviceOf("service.default.web"), { namespace: "default", name: "web" });
    assert.equal(keys.serviceOf(stack), undefined);
    assert.equal(keys.stackOf(ns, long), stack);
    assert.deepEqual(keys.serviceOf(stack), { namespace: ns, name: long });
    assert.equal(keys.serviceOf("cluster"), undefined);
    assert.deepEqual(
      parseStackKey(stack, (name) => keys.serviceOf(name)),
      { kind: "service", namespace: ns, name: long },
    );
    assert.equal(parseStackKey(stack), undefined);
  });

  it("status rows name the Service of a shortened stack: the daemon's from what it saw, dccm status's from the stack", () => {
    const keys = new ServiceStackKeys();
    keys.stackOf(ns, long);
    const book = new StatusBook(undefined, (name) => keys.serviceOf(name));
    book.track(stack);
    assert.equal(book.list()[0].service, `${ns}/${long}`);
    assert.equal(emptyRow(stack).service, null);
    assert.equal(emptyRow(stack, { namespace: ns, name: long }).service, `${ns}/${long}`);
  });

  it("stackScope: from the name, or from the Service a shortened name is known to be for", () => {
    assert.deepEqual(stackScope("service.default.web"), { kind: "service", namespace: "default", name: "web" });
    assert.deepEqual(stackScope(stack, `${ns}/${long}`), { kind: "service", namespace: ns, name: long });
    assert.deepEqual(stackScope("cluster"), { kind: "cluster" });
  });
});

describe("model/names parseServiceKey", () => {
  const table: [string, { namespace: string; name: string } | undefined][] = [
    ["default/web", { namespace: "default", name: "web" }],
    ["web", undefined],
    ["a/b/c", undefined],
    ["/web", { namespace: "", name: "web" }],
  ];
  for (const [key, expected] of table)
    it(`${JSON.stringify(key)} → ${JSON.stringify(expected)}`, () => assert.deepEqual(parseServiceKey(key), expected));

  it("is serviceKey's inverse for every Kubernetes-valid namespace and name", () => {
    const label = fc.stringMatching(/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/);
    fc.assert(
      fc.property(label, label, (namespace, name) =>
        assert.deepEqual(parseServiceKey(serviceKey(namespace, name)), { namespace, name }),
      ),
    );
  });
});
