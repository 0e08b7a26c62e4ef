#!/usr/bin/env bash
# The GPU run, in two halves because the GPU machine has a Vulkan driver but no Rust toolchain
# and no Vulkan loader:
#
#   bash ci/gpu.sh stage              # here: build, strip into .devbin/, fetch the loader (.gl/)
#   bash ci/gpu.sh campaign OUT [...] # there (through .gl/on-device.sh): the validated campaign
#                                     # of every kernel, then the benchmarks, logs under OUT
#   bash ci/gpu.sh bench OUT [...]    # there: only `vkdiff bench ...`, log under OUT
#
# `UPSTREAM=0.1.109 bash ci/gpu.sh stage` also copies that upstream shader tree
# (ci/upstream-tree.sh) to .devbin/upstream-shaders, for `bench OUT --against .devbin/upstream-shaders`.
#
# With the workplace's device tool: `run` with carry [".gl", ".devbin"] and the command
#   bash ci/gpu.sh campaign $OUT
# Extra arguments after OUT go to `vkdiff run` (e.g. --cases 1000 -o flash_attn).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
stage)
    source ci/env.sh
    [ -x .gl/on-device.sh ] || bash ../shared/device/prepare.sh
    cargo build --release --quiet -p vkdiff
    mkdir -p .devbin
    cp "$CARGO_TARGET_DIR/release/vkdiff" .devbin/vkdiff
    strip .devbin/vkdiff
    if [ -n "${UPSTREAM:-}" ]; then
        tree=$(bash ci/upstream-tree.sh "$UPSTREAM")
        rm -rf .devbin/upstream-shaders
        cp -r "$tree/ggml/src/ggml-vulkan/vulkan-shaders" .devbin/upstream-shaders
        echo "ci/gpu.sh: staged upstream $UPSTREAM's shaders in .devbin/upstream-shaders"
    fi
    echo "ci/gpu.sh: staged .devbin/vkdiff ($(du -h .devbin/vkdiff | cut -f1)); carry .gl and .devbin"
    ;;
campaign)
    out="${2:?usage: ci/gpu.sh campaign OUT [vkdiff run args]}"
    shift 2
    mkdir -p "$out"
    vk() { bash .gl/on-device.sh .devbin/vkdiff "$@"; }
    vk devices > "$out/devices.txt" 2>&1 || true
    # Every case under the validation layer; the report is written as results arrive, so a
    # command stopped at its time limit still returns what it judged.
    set +e
    vk run --validate --out "$out/campaign" "$@" > "$out/campaign.log" 2>&1
    status=$?
    vk bench > "$out/bench.log" 2>&1
    set -e
    tail -n 120 "$out/campaign.log"
    exit "$status"
    ;;
bench)
    out="${2:?usage: ci/gpu.sh bench OUT [vkdiff bench args]}"
    shift 2
    mkdir -p "$out"
    set +e
    # The table (stdout) apart from the per-row host times and messages (stderr); the table's
    # rows are wider than a device reply's tail, so the reply shows the summary and the whole
    # table comes back as OUT/bench.log.
    bash .gl/on-device.sh .devbin/vkdiff bench "$@" > "$out/bench.log" 2> "$out/bench.err"
    status=$?
    set -e
    tail -n 5 "$out/bench.err"
    sed -n '/^summary:/,$p' "$out/bench.log"
    exit "$status"
    ;;
*)
    sed -n '2,16p' "$0"
    exit 2
    ;;
esac
