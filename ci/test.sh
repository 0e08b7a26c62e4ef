#!/usr/bin/env bash
# The test suite: the reference's own tests, the harness's unit tests, the differential suite
# on the default Vulkan device (lavapipe on CI) and a bounded run of every fuzz target. This is
# what CI runs.
#
# Most of a lavapipe test's time is single-threaded (LLVM compiling each pipeline), so after one
# build the test binaries run side by side, VKDIFF_CI_JOBS at a time (default: the CPU's cores),
# longest first, with the fuzz build among them; each one's log is printed when it ends, and the
# phase times at the end. Arguments (e.g. a test name filter) give the plain sequential
# `cargo test --release --workspace ARGS` instead.
set -euo pipefail
cd "$(dirname "$0")/.."
t_install=$(date +%s)
source ci/env.sh
# What earlier runs left (CI's own output then says whether its times were measured cold).
shaderc_cached=$(compgen -G "$CARGO_TARGET_DIR/release/build/shaderc-sys-*/out/lib*" >/dev/null && echo warm || echo cold)
# (A machine that never built ggml has no cache folder: find fails, which is not an error.)
ggml_cached=$({ find "${VKDIFF_GGML_CACHE:-$HOME/.cache/vkdiff-ggml}" -mindepth 2 -maxdepth 2 -name build -type d 2>/dev/null || true; } | wc -l)
bash ci/install.sh
# Every GPU call runs under the Khronos validation layer (with synchronization validation):
# any message fails its case. Override with VKDIFF_VALIDATE=0.
export VKDIFF_VALIDATE="${VKDIFF_VALIDATE:-1}"
start=$(date +%s)
fuzz=1
[ "${FUZZ_SECONDS:-30}" != 0 ] || fuzz=0
if (($#)); then
    # Includes the reference's criterion benchmarks (reference/benches/ops.rs, `test = true`):
    # under `cargo test` each runs once on cut-down shapes (about a second), results checked.
    cargo test --release --workspace "$@"
    ((fuzz == 0)) || bash ci/fuzz.sh
    echo "ci/test.sh: done in $(($(date +%s) - t_install))s (install included)"
    exit 0
fi

cargo test --release --workspace --no-run
built=$(date +%s)
logs=$(mktemp -d)
# One job per line: a name, then the command. The slow ones first (differential, faults).
jobs_file="$logs/jobs"
tests=$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
m = json.load(sys.stdin)
for p in m["packages"]:
    for t in p["targets"]:
        if "test" in t["kind"]:
            print(p["name"], t["name"])')
{
    for slow in differential faults; do
        grep -E " $slow\$" <<<"$tests" || true
    done
    grep -vE " (differential|faults)\$" <<<"$tests" || true
} | while read -r _package target; do
    # --workspace, as the build above: `-p` would resolve features differently and rebuild.
    if [ "$target" = differential ]; then
        # The longest job by far and one device's worth of serial work: two halves (MUL_MAT_ID's
        # matrix-matrix rows, the slowest per case, and the rest) so the two cores share it.
        echo "test-differential-mm_id cargo test --release --workspace --test $target -- mul_mm_id"
        echo "test-$target cargo test --release --workspace --test $target -- --skip mul_mm_id"
    else
        echo "test-$target cargo test --release --workspace --test $target"
    fi
done >"$jobs_file"
# Unit tests, the criterion benches once (`test = true`: cut-down shapes, results checked), doc tests.
echo "unit cargo test --release --workspace --lib --bins --benches" >>"$jobs_file"
echo "doc cargo test --release --workspace --doc" >>"$jobs_file"
((fuzz == 0)) || echo "fuzz-build bash ci/fuzz.sh build" >>"$jobs_file"

slots="${VKDIFF_CI_JOBS:-$(nproc)}"
declare -A pid_name=() began=()
failed=()
summary=()
finish() { # reaps one finished job and prints its log
    local pid status=0
    wait -n -p pid "${!pid_name[@]}" || status=$?
    local name="${pid_name[$pid]}"
    unset "pid_name[$pid]"
    local took=$(($(date +%s) - began[$name]))
    echo "=== $name: exit $status after ${took}s"
    cat "$logs/$name.log"
    summary+=("$(printf '%-24s %5ss  exit %s' "$name" "$took" "$status")")
    ((status == 0)) || failed+=("$name")
}
while read -r name command; do
    while ((${#pid_name[@]} >= slots)); do finish; done
    echo "ci/test.sh: starting $name"
    began[$name]=$(date +%s)
    bash -c "$command" >"$logs/$name.log" 2>&1 &
    pid_name[$!]=$name
done <"$jobs_file"
while ((${#pid_name[@]})); do finish; done
if ((fuzz)) && ((${#failed[@]} == 0)); then
    t=$(date +%s)
    bash ci/fuzz.sh run
    summary+=("$(printf '%-24s %5ss' fuzz-run "$(($(date +%s) - t))")")
fi
# One closing count over every test binary's "test result:" line (ignored = skipped: a test
# the device cannot run), since the jobs' own closing lines arrive in completion order.
counts=$(cat "$logs"/*.log | python3 -c '
import re, sys
p = f = i = 0
for line in sys.stdin:
    m = re.search(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", line)
    if m:
        p += int(m.group(1)); f += int(m.group(2)); i += int(m.group(3))
print(f"{p} passed, {f} failed, {i} skipped")')
echo "ci/test.sh: caches at start: shaderc build $shaderc_cached, $ggml_cached ggml build folder(s)"
echo "ci/test.sh: install $((start - t_install))s, build $((built - start))s, then ($slots at a time):"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
    echo "ci/test.sh: FAILED: ${failed[*]}" >&2
    echo "tests: $counts"
    exit 1
fi
echo "ci/test.sh: done in $(($(date +%s) - t_install))s (install included)"
echo "tests: $counts"
