#!/usr/bin/env bash
# The kill -9 crash test at length: 500 iterations by default (CI runs 60 as part of `make test`).
# Usage: scripts/crash-test.sh [ITERATIONS] ; RECD_CRASH_SEED=N replays a run.
set -euo pipefail
cd "$(dirname "$0")/.."
export RECD_CRASH_ITERATIONS=${1:-500}
swift build --build-tests
swift test --skip-build --disable-swift-testing --filter CrashTests
