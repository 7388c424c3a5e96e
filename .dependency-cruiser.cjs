// The floors of docs/explanation/architecture.md ("Floors and imports"): a module imports only from its own
// floor or the floors below, never a cycle. `npm run lint` runs this (depcruise); a violation fails it.
const FLOORS = [
  ["model", "runtime", "gce"],
  ["watcher", "components"],
  ["stacks"],
  ["drift", "leaks", "adopt", "preview"],
  ["controllers"],
  ["daemon"],
  ["bin", "deploy", "program"],
];
// Folders of one floor import one another one way only, so that no two folders form a cycle
// (dependency-cruiser's circular sees files, not folders): each imports only the folders after it here.
const SAME_FLOOR_ORDER = [
  ["gce", "model", "runtime"],
  ["adopt", "preview", "drift", "leaks"],
  ["bin", "deploy", "program"],
];
const PRODUCTION = FLOORS.flat();
const folder = (name) => `^${name}/`;
const above = (index) => FLOORS.slice(index + 1).flat();

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      severity: "error",
      comment:
        "An import cycle: the floors order every folder, and a folder's files import one another without a loop.",
      from: {},
      to: { circular: true },
    },
    ...FLOORS.flatMap((names, index) =>
      names.map((name) => ({
        name: `floor-${index + 1}-${name}`,
        severity: "error",
        comment: `${name}/ is on floor ${index + 1}: it imports only from its floor or below (docs/explanation/architecture.md).`,
        from: { path: folder(name) },
        to: { path: `^(${[...above(index), "index\\.ts$", "test", "bench", "emulator", "scripts"].join("|")})(/|$)` },
      })),
    ),
    ...SAME_FLOOR_ORDER.flatMap((names) =>
      names.slice(1).map((name, index) => ({
        name: `no-folder-cycle-${name}`,
        severity: "error",
        comment: `${name}/ imports no folder of its floor listed before it in SAME_FLOOR_ORDER (${names.slice(0, index + 1).join(", ")}): folders form no cycle.`,
        from: { path: folder(name) },
        to: { path: `^(${names.slice(0, index + 1).join("|")})/` },
      })),
    ),
    {
      name: "floor-1-model-imports-nothing",
      severity: "error",
      comment: "model/ is pure: it imports nothing of the project but itself.",
      from: { path: "^model/" },
      to: { path: `^(${PRODUCTION.filter((name) => name !== "model").join("|")})/` },
    },
    {
      name: "floor-1-runtime-imports-nothing",
      severity: "error",
      comment: "runtime/ is the controller runtime: it imports nothing of the project but itself.",
      from: { path: "^runtime/" },
      to: { path: `^(${PRODUCTION.filter((name) => name !== "runtime").join("|")})/` },
    },
    {
      name: "same-floor-siblings",
      severity: "error",
      comment: "watcher/ and components/ share floor 2 without knowing each other.",
      from: { path: "^(watcher|components)/" },
      to: { path: "^(watcher|components)/", pathNot: "^$1/" },
    },
    {
      name: "in-a-floor",
      severity: "error",
      comment:
        "Every TypeScript file of the project lives in a floor's folder, or in test/, bench/, emulator/ (a new top-level folder needs its floor here and in docs/explanation/architecture.md).",
      from: { path: "\\.ts$", pathNot: `^(${[...PRODUCTION, "test", "bench", "emulator"].join("|")})/|^index\\.ts$` },
      to: {},
    },
    {
      name: "automation-api-only-in-stacks",
      severity: "error",
      comment:
        "stacks/ is the only code that runs the Automation API (docs/explanation/architecture.md, floor 3): nothing else touches a workspace.",
      from: { path: `^(${PRODUCTION.filter((name) => name !== "stacks").join("|")})/|^index\\.ts$` },
      to: { path: "node_modules/@pulumi/pulumi/automation" },
    },
    {
      name: "production-not-tests",
      severity: "error",
      comment: "Production code never imports tests, the bench or the emulator.",
      from: { path: `^(${PRODUCTION.join("|")}|index\\.ts$)` },
      to: { path: "^(test|bench|emulator)/" },
    },
    {
      name: "unit-tests-not-e2e-harness",
      severity: "error",
      comment:
        "Unit tests and their fakes run without the e2e harness (apiserver, emulator, daemon process); only its own unit test imports it.",
      from: { path: "^test/(unit|support/fakes)/", pathNot: "^test/unit/support/e2e/" },
      to: { path: "^test/support/e2e/" },
    },
    {
      name: "bench-not-tests",
      severity: "error",
      comment: "The bench takes what it needs from test/support (the e2e harness, tooling, a fake), never a test.",
      from: { path: "^bench/" },
      to: { path: "^test/(unit|e2e|chaos)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|\\.testenv|\\.git)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    combinedDependencies: false,
  },
};
