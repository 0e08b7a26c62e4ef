#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time (FUZZ_SECONDS each, default 30) on the default
# Vulkan device (lavapipe on CI) and fails on any crash or mismatch. Long campaigns:
#   cd fuzz && cargo +nightly fuzz run TARGET -- -max_total_time=3600
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
seconds="${FUZZ_SECONDS:-30}"
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "ci/fuzz.sh: no nightly toolchain (rustup toolchain install nightly); fuzzing skipped" >&2
    exit 0
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --quiet
# Fuzz builds use nightly and sanitizer flags: their own persistent build folder.
export CARGO_TARGET_DIR="${VKDIFF_FUZZ_TARGET_DIR:-$HOME/.cache/vkdiff-fuzz-target}"
cd fuzz
cargo +nightly fuzz build --release
for target in $(cargo +nightly fuzz list); do
    corpus="$CARGO_TARGET_DIR/corpus/$target"
    mkdir -p "$corpus"
    echo "ci/fuzz.sh: $target for ${seconds}s"
    log="$CARGO_TARGET_DIR/$target.log"
    set +e
    # The built binary directly (memory settings: see the README, Fuzzing). LeakSanitizer's exit check (ASAN_OPTIONS) would otherwise report
    # the Vulkan driver's allocations, which it frees only at process exit.
    ASAN_OPTIONS="detect_leaks=0:detect_odr_violation=0:quarantine_size_mb=64" \
        "$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/$target" "$corpus" \
        -max_total_time="$seconds" -rss_limit_mb=6144 -detect_leaks=0 -print_final_stats=1 > "$log" 2>&1
    status=$?
    set -e
    grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec)" "$log" || true
    if [ "$status" -ne 0 ]; then
        tail -n 60 "$log"
        echo "ci/fuzz.sh: $target failed (full log: $log); turn the artifact into a reproducer with" >&2
        echo "  vkdiff fuzz-repro ${target#kernel_} fuzz/artifacts/$target/<file>" >&2
        exit 1
    fi
done
echo "ci/fuzz.sh: every target ran ${seconds}s without a crash or mismatch"
