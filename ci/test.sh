#!/usr/bin/env bash
# The test suite: the reference's own tests, the harness's unit tests and the differential
# suite on the default Vulkan device (lavapipe on CI). This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install.sh
source ci/env.sh
start=$(date +%s)
cargo test --release --workspace "$@"
echo "ci/test.sh: done in $(( $(date +%s) - start ))s"
