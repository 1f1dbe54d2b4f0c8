// What the interop drivers share: their command line, their checks, and how they report them
// (one JSON line per check on stdout; exit 1 if any failed), which scripts/interop.py reads.
"use strict";

const path = require("node:path");

// The drivers' command line: `node <script> <node_modules dir> <endpoint URL>`.
function commandLine(script) {
  const [modulesDir, url] = process.argv.slice(2);
  if (!modulesDir || !url) {
    console.error(`usage: node ${script} <node_modules dir> <endpoint URL>`);
    process.exit(2);
  }
  return { modulesDir: path.resolve(modulesDir), url };
}

const results = [];
function check(name, ok, detail) {
  results.push({ check: name, ok: Boolean(ok), detail: ok ? undefined : detail });
}
const textOf = (result) => (result && result.content && result.content[0] && result.content[0].text) || "";
const describe = (error) => String(error && error.stack ? error.stack : error);

// Print every check and exit: 0 if all passed, 1 otherwise.
function report() {
  for (const result of results) console.log(JSON.stringify(result));
  process.exit(results.every((result) => result.ok) ? 0 : 1);
}

module.exports = { commandLine, check, textOf, describe, report };
