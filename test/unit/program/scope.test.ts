// program/scope.ts: dccm:scope as CI writes it, and the chunk each Service belongs to.
import * as assert from "node:assert/strict";
import fc from "fast-check";
import { chunkOf, chunkServices, parseProgramScope, type ProgramScope } from "../../../program/scope";

describe("program/scope: parseProgramScope", () => {
  const cases: [string | undefined, ProgramScope][] = [
    [undefined, { kind: "all" }],
    ["all", { kind: "all" }],
    ["cluster", { kind: "cluster" }],
    ["service:default/web", { kind: "service", namespace: "default", name: "web" }],
    ["services:0/1", { kind: "services", index: 0, count: 1 }],
    [" services:2/3 ", { kind: "services", index: 2, count: 3 }],
    ["services:999/1000", { kind: "services", index: 999, count: 1000 }],
  ];
  for (const [text, scope] of cases)
    it(`${JSON.stringify(text)} → ${JSON.stringify(scope)}`, () =>
      assert.deepStrictEqual(parseProgramScope(text), scope));

  for (const bad of [
    "services:1/1",
    "services:0/0",
    "services:0/1001",
    "services:-1/2",
    "services:a/b",
    "services:1",
    "services:",
    "services:1/2/3",
  ]) {
    it(`${JSON.stringify(bad)} is refused naming the chunk form`, () =>
      assert.throws(() => parseProgramScope(bad), {
        message: `dccm:scope: "${bad}" is not services:<i>/<n> with 0 <= i < n <= 1000`,
      }));
  }
  for (const bad of ["service:web", "every", "service"]) {
    it(`${JSON.stringify(bad)} is refused naming every form, keeping components/stack.ts's error`, () => {
      assert.throws(
        () => parseProgramScope(bad),
        (error: Error) => {
          assert.equal(
            error.message,
            `dccm:scope: "${bad}" is not all, cluster, service:<namespace>/<name> or services:<i>/<n>`,
          );
          assert.equal(
            (error.cause as Error).message,
            `dccm:scope: "${bad}" is not all, cluster or service:<namespace>/<name>`,
          );
          return true;
        },
      );
    });
  }
});

describe("program/scope: chunkOf and chunkServices", () => {
  // The first 4 bytes of sha256(key), big-endian, mod count: written out, never computed here.
  const cases: [string, number, number][] = [
    ["default/web", 1, 0],
    ["default/web", 2, 1],
    ["default/web", 3, 1],
    ["default/web", 10, 5],
    ["kube-system/dns", 3, 0],
    ["kube-system/dns", 10, 7],
    ["default/restricted", 2, 0],
    ["db/internal", 1000, 859],
  ];
  for (const [key, count, chunk] of cases)
    it(`chunkOf(${key}, ${count}) = ${chunk}`, () => assert.equal(chunkOf(key, count), chunk));

  it("chunkServices keeps the given order", () => {
    assert.deepStrictEqual(
      chunkServices(["default/web", "kube-system/dns", "db/internal", "default/restricted"], 1, 2),
      ["default/web", "kube-system/dns", "db/internal"],
    );
    assert.deepStrictEqual(
      chunkServices(["default/web", "kube-system/dns", "db/internal", "default/restricted"], 0, 2),
      ["default/restricted"],
    );
  });

  it("property: the chunks of any Services partition them exactly (each Service in one chunk, none left out)", () => {
    const key = fc
      .tuple(fc.stringMatching(/^[a-z0-9-]{1,12}$/), fc.stringMatching(/^[a-z0-9-]{1,12}$/))
      .map(([namespace, name]) => `${namespace}/${name}`);
    fc.assert(
      fc.property(fc.uniqueArray(key, { maxLength: 60 }), fc.integer({ min: 1, max: 40 }), (keys, count) => {
        const chunks = Array.from({ length: count }, (_, index) => chunkServices(keys, index, count));
        assert.deepStrictEqual(chunks.flat().sort(), [...keys].sort());
        for (const [index, chunk] of chunks.entries())
          for (const member of chunk) assert.equal(chunkOf(member, count), index);
      }),
    );
  });

  it("property: adding a Service moves no other Service to another chunk", () => {
    const key = fc.stringMatching(/^[a-z0-9-]{1,8}\/[a-z0-9-]{1,8}$/);
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { minLength: 1, maxLength: 30 }),
        key,
        fc.integer({ min: 1, max: 40 }),
        (keys, added, count) => {
          const before = new Map(keys.map((k) => [k, chunkOf(k, count)]));
          const after = [...keys, added];
          for (let index = 0; index < count; index++)
            for (const member of chunkServices(after, index, count))
              if (before.has(member)) assert.equal(before.get(member), index);
        },
      ),
    );
  });
});
