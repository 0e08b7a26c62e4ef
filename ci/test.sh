#!/usr/bin/env bash
# The test suite: the reference's own tests, the harness's unit tests, the differential suite
# on the default Vulkan device (lavapipe on CI) and a bounded run of every fuzz target. This is
# what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install.sh
source ci/env.sh
# Every GPU call runs under the Khronos validation layer (with synchronization validation):
# any message fails its case. Override with VKDIFF_VALIDATE=0.
export VKDIFF_VALIDATE="${VKDIFF_VALIDATE:-1}"
start=$(date +%s)
# Includes the reference's criterion benchmarks (reference/benches/ops.rs, `test = true`): under
# `cargo test` each runs once on cut-down shapes (about a second), results checked.
cargo test --release --workspace "$@"
# Every fuzz target for a bounded time (FUZZ_SECONDS, default 30; FUZZ_SECONDS=0 skips).
if [ "${FUZZ_SECONDS:-30}" != 0 ]; then
    bash ci/fuzz.sh
fi
echo "ci/test.sh: done in $(( $(date +%s) - start ))s"
