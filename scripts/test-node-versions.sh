#!/usr/bin/env bash
# `npm run test:node-versions`: the package on Node 22 and 24 without its native
# driver. For each version, a Node binary from the npm registry's `node` package
# (npx -p node@<major>) runs `cairn demo` (default driver choice: better-sqlite3,
# built for the Node that installed it, does not load there, so node:sqlite is
# taken) and vitest on the conformance and driver suites (the encrypted SQLite engine's
# too: node:sqlite hands its sealed BLOBs back as Uint8Array) with
# CAIRN_SQLITE_DRIVER=node:sqlite, and on the first version the worked example's SQLite
# crash suite too (its child processes inherit both the binary, process.execPath, and
# the variable). The other crash suites exercise the runtime, not the driver: they run
# once, in `npm test`.
#
# A version whose binary cannot be installed FAILS the run: nothing is skipped.
# Usage: scripts/test-node-versions.sh [major...]   (default: 22 24)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(22 24)

TESTS=(
  test/conformance/checkpointer.memory.test.ts
  test/conformance/ledger.memory.test.ts
  test/conformance/store.memory.test.ts
  test/conformance/checkpointer.sqlite.test.ts
  test/conformance/ledger.sqlite.test.ts
  test/conformance/store.sqlite.test.ts
  test/conformance/driver-failures.sqlite.test.ts
  test/engines/sqlite-drivers.test.ts
  test/engines/sqlite-errors.test.ts
  test/crypto/checkpointer.encrypted-sqlite.test.ts
)
# The worked example's SQLite crash suite on the first version only: it proves the
# driver keeps a killed run's commits; the other versions run the same driver code.
CRASH_TESTS=(test/crash/worked-example.crash.test.ts)

# The tests and the demo run the built package: build it (with the Node that installed the
# dependencies) unless its last build (dist/.tsbuildinfo: the build is incremental, so
# an unchanged output keeps its old time) is newer than every source file, as right
# after `npm test`.
if [ ! -f dist/index.js ] || [ ! -x dist/cli/main.js ] || [ ! -f dist/.tsbuildinfo ] || [ -n "$(find src package.json tsconfig.json tsconfig.build.json -newer dist/.tsbuildinfo -print -quit)" ]; then
  npm run build --silent
fi

started=$SECONDS
for major in "${VERSIONS[@]}"; do
  t0=$SECONDS
  echo "=== Node ${major}: installing the binary (npx -p node@${major}) ==="
  if ! node_bin=$(npx -y -p "node@${major}" -c 'node -p process.execPath'); then
    echo "FAIL: could not install Node ${major} from the npm registry (npx -p node@${major}); the Node ${major} run is required, not skipped." >&2
    exit 1
  fi
  version=$("$node_bin" --version)
  if [[ "$version" != "v${major}."* ]]; then
    echo "FAIL: npx -p node@${major} gave ${node_bin} (${version}), not Node ${major}." >&2
    exit 1
  fi
  echo "=== Node ${version} (${node_bin}): cairn demo, default driver ==="
  (unset CAIRN_SQLITE_DRIVER; "$node_bin" dist/cli/main.js demo)
  echo "=== Node ${version}: vitest, CAIRN_SQLITE_DRIVER=node:sqlite ==="
  if [ "$major" = "${VERSIONS[0]}" ]; then suites=("${TESTS[@]}" "${CRASH_TESTS[@]}"); else suites=("${TESTS[@]}"); fi
  CAIRN_SQLITE_DRIVER=node:sqlite "$node_bin" node_modules/vitest/vitest.mjs run "${suites[@]}"
  echo "=== Node ${version}: passed in $((SECONDS - t0)) s ==="
done
echo "=== Node ${VERSIONS[*]}: all passed in $((SECONDS - started)) s ==="
