#!/usr/bin/env bash
# The test suite: the reference's own tests, the harness's unit tests and the differential
# suite on the default Vulkan device (lavapipe on CI). This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install.sh
source ci/env.sh
# Every GPU call runs under the Khronos validation layer (with synchronization validation):
# any message fails its case. Override with VKDIFF_VALIDATE=0.
export VKDIFF_VALIDATE="${VKDIFF_VALIDATE:-1}"
start=$(date +%s)
cargo test --release --workspace "$@"
echo "ci/test.sh: done in $(( $(date +%s) - start ))s"
