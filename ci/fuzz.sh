#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time (FUZZ_SECONDS each, default 30) on the default
# Vulkan device (lavapipe on CI) and fails on any crash or mismatch. Long campaigns:
#   cd fuzz && cargo +nightly fuzz run TARGET -- -max_total_time=3600
# `ci/fuzz.sh build` only builds, `ci/fuzz.sh run` only runs (ci/test.sh builds while tests run).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
seconds="${FUZZ_SECONDS:-30}"
mode="${1:-all}"
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "ci/fuzz.sh: no nightly toolchain (rustup toolchain install nightly); fuzzing skipped" >&2
    exit 0
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --quiet
# Fuzz builds use nightly and sanitizer flags: their own persistent build folder.
release_target="$CARGO_TARGET_DIR"
export CARGO_TARGET_DIR="${VKDIFF_FUZZ_TARGET_DIR:-$HOME/.cache/vkdiff-fuzz-target}"
# shaderc's C++ does not depend on the Rust toolchain: link the library the release build
# compiled (ci/test.sh builds it first) instead of compiling it again (about 10 minutes on 2
# cores). A copy at a fixed path keeps the fuzz build linkable after the release folder changes.
# Without one, the fuzz build compiles shaderc itself.
features=(--features shaderc-from-source)
built=$(ls -t "$release_target"/release/build/shaderc-sys-*/out/lib/libshaderc_combined.a 2>/dev/null | head -n 1 || true)
if [ -n "$built" ]; then
    mkdir -p "$CARGO_TARGET_DIR/shaderc-lib"
    cmp -s "$built" "$CARGO_TARGET_DIR/shaderc-lib/libshaderc_combined.a" ||
        cp "$built" "$CARGO_TARGET_DIR/shaderc-lib/libshaderc_combined.a"
    export SHADERC_LIB_DIR="$CARGO_TARGET_DIR/shaderc-lib"
    features=()
fi
cd fuzz
[ "$mode" = run ] || cargo +nightly fuzz build --release "${features[@]}"
[ "$mode" != build ] || exit 0
# The `kernel` target serves every kernel of the registry (VKDIFF_FUZZ_KERNEL picks one): it
# runs once per kernel that `vkdiff list` names, as `kernel_<name>` with its own corpus.
kernels=$(cd .. && CARGO_TARGET_DIR="$release_target" cargo run --release -q -p vkdiff -- list | awk '/^[a-z]/ {print $1}')
runs=()
for target in $(cargo +nightly fuzz list); do
    if [ "$target" = kernel ]; then
        for k in $kernels; do runs+=("kernel:$k"); done
    else
        runs+=("$target:")
    fi
done
# One run of a target (its time is its own: FUZZ_JOBS of them, default one per core, run side by
# side, each single-threaded, so the wall time shrinks and each keeps its full FUZZ_SECONDS).
fuzz_one() {
    local run=$1 target kernel name corpus log status
    target=${run%%:*}
    kernel=${run#*:}
    name=$target${kernel:+_$kernel}
    corpus="$CARGO_TARGET_DIR/corpus/$name"
    mkdir -p "$corpus" "artifacts/$name"
    log="$CARGO_TARGET_DIR/$name.log"
    # The built binary directly (memory settings: see the README, Fuzzing). LeakSanitizer's exit check (ASAN_OPTIONS) would otherwise report
    # the Vulkan driver's allocations, which it frees only at process exit.
    VKDIFF_FUZZ_KERNEL="$kernel" ASAN_OPTIONS="detect_leaks=0:detect_odr_violation=0:quarantine_size_mb=64" \
        "$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/$target" "$corpus" \
        -artifact_prefix="artifacts/$name/" \
        -max_total_time="$seconds" -rss_limit_mb=6144 -detect_leaks=0 -print_final_stats=1 > "$log" 2>&1
    status=$?
    echo "$status" > "$statuses/$name"
    echo "ci/fuzz.sh: $name ran ${seconds}s: exit $status; $(grep -E "^stat::(number_of_executed_units|average_exec_per_sec)" "$log" | tr '\n' ' ')"
    if [ "$status" -ne 0 ]; then
        tail -n 60 "$log"
        echo "ci/fuzz.sh: $name failed (full log: $log)" >&2
        [ -z "$kernel" ] || echo "  reproducer: vkdiff fuzz-repro $kernel fuzz/artifacts/$name/<file>" >&2
    fi
    return "$status"
}
slots="${FUZZ_JOBS:-$(nproc)}"
statuses=$(mktemp -d)
set +e
for run in "${runs[@]}"; do
    while (($(jobs -rp | wc -l) >= slots)); do wait -n; done
    fuzz_one "$run" &
done
wait
set -e
# Each run wrote its exit status (collected from files: `wait -n` may reap a job early).
if grep -qv '^0$' "$statuses"/* || (($(ls "$statuses" | wc -l) != ${#runs[@]})); then
    echo "ci/fuzz.sh: failed: $(grep -lv '^0$' "$statuses"/* | xargs -r -n1 basename | tr '\n' ' ')" >&2
    exit 1
fi
echo "ci/fuzz.sh: every target ran ${seconds}s without a crash or mismatch"
