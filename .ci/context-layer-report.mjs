// The published Context Layer conformance report (seed 000 §14: every claimed
// role publishes machine-readable results): the stable fields of ctx's own
// suite and of the spec owner's kit — ids and statuses, no timestamps or
// durations — so the committed report changes only when a result does.
//
//   node .ci/context-layer-report.mjs SUITE.json KIT.json            # print
//   node .ci/context-layer-report.mjs SUITE.json KIT.json --write R  # refresh R
//   node .ci/context-layer-report.mjs SUITE.json KIT.json --check R  # CI
import { readFileSync, writeFileSync } from "node:fs";

const [suitePath, kitPath, mode, reportPath] = process.argv.slice(2);
if (!suitePath || !kitPath || (mode && !reportPath)) {
  console.error("usage: context-layer-report.mjs SUITE.json KIT.json [--write|--check REPORT.json]");
  process.exit(2);
}
const read = (p) => JSON.parse(readFileSync(p, "utf8"));
const suite = read(suitePath);
const kit = read(kitPath);
const report = {
  report: "ctx Context Layer conformance",
  claimed_profiles: ["CL-Core-Issuer", "CL-Receipt-Store"],
  suite: {
    command: "ctx conformance conformance/context-layer --format json",
    passed: suite.passed,
    failed: suite.failed,
    not_run: suite.not_run,
    cases: suite.cases.map((c) => ({ case: c.case, status: c.status })),
  },
  kit: {
    command: 'node ../shared/reference/context-layer-kit/run.mjs -- "$PWD/target/debug/ctx" exchange kit-adapter',
    kit_version: kit.kit_version,
    profile: kit.profile,
    scope: kit.scope,
    status: kit.status,
    passed: kit.passed,
    failed: kit.failed,
    results: kit.results.map((r) => ({ id: r.id, status: r.status })),
  },
};
const text = JSON.stringify(report, null, 2) + "\n";
if (!mode) {
  process.stdout.write(text);
} else if (mode === "--write") {
  writeFileSync(reportPath, text);
} else if (mode === "--check") {
  let committed = "";
  try {
    committed = readFileSync(reportPath, "utf8");
  } catch (e) {
    committed = `(unreadable: ${e.message})`;
  }
  if (committed !== text) {
    const a = committed.split("\n");
    const b = text.split("\n");
    const i = b.findIndex((l, n) => l !== a[n]);
    console.error(`error: ${reportPath} does not match this run's Context Layer results`);
    console.error(`  first difference at line ${i + 1}: committed ${JSON.stringify(a[i] ?? "")}, now ${JSON.stringify(b[i] ?? "")}`);
    console.error("  refresh it (after checking why the results changed) with:");
    console.error("  .ci/run-context-layer-report --write");
    process.exit(1);
  }
} else {
  console.error(`unknown mode ${mode}: --write or --check`);
  process.exit(2);
}
