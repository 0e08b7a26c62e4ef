# Helpers for one-off device scripts (a shader experiment's scripts, staged by
# ci/stage-trees.sh), sourced on the GPU machine from the repository root as
# `source ci/device-calls.sh "$OUT" || exit 1` (the call's
# $OUT): it readies the machine (.gl/on-device.sh), then each helper writes its log under
# $LOGS (OUT/logs) and prints a short summary for the device reply's tail. Trees: $U
# (upstream's, from `ci/gpu.sh stage`) and $T/NAME (from `ci/stage-trees.sh`).
#   device_run NAME LIMIT TREE [vkdiff run args]   cases of the shader tree TREE (QUIET=1: no
#                                                  line per variant, only the summary)
#   device_bench NAME LIMIT [vkdiff bench args]    bench rows, starting none after LIMIT s
#   device_ggml NAME LIMIT VERSION CONFIG [args]   bench rows against ggml VERSION's own backend
#                                                  (.devbin/ggml-VERSION.tgz, from `GGML=VERSION
#                                                  ci/gpu.sh stage`) on path CONFIG, ggml's GPU
#                                                  time per compute in NAME.err (its perf logger;
#                                                  here: ci/ggml-gpu-times.py NAME.log NAME.err);
#                                                  our side: TREE (default shaders)
#   device_pack                                    OUT/logs.tgz from the logs so far: after each
#                                                  step, so a call cut at its limit still brings
#                                                  back what finished
V=${V:-.devbin/vkdiff}
U=.devbin/upstream-shaders
T=.devbin/trees
OUT_DIR=${1:?usage: source ci/device-calls.sh OUT}
LOGS=$OUT_DIR/logs
mkdir -p "$LOGS"
source ci/gpu-machine.sh || return 1
bash .gl/on-device.sh true

device_run() {
    local n=$1 l=$2 t=$3; shift 3
    local s=$(date +%s)
    timeout "$l" bash .gl/on-device.sh "$V" run --shaders "$t" "$@" --out "$LOGS/$n" > "$LOGS/$n.log" 2>&1
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    [ -n "$QUIET" ] || grep -E "cases, " "$LOGS/$n.log" | cut -c1-120
    tail -2 "$LOGS/$n.log" | cut -c1-200
}

device_bench() {
    local n=$1 l=$2; shift 2
    local s=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh "$V" bench "$@" --time-limit "$l" > "$LOGS/$n.log" 2> "$LOGS/$n.err"
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    grep -E '^(flash_|mul_|wkv7|summary)' "$LOGS/$n.log" | cut -c1-250
}

device_ggml() {
    local n=$1 l=$2 v=$3 c=$4; shift 4
    [ -d ".devbin/ggml-$v" ] || tar xzf ".devbin/ggml-$v.tgz" -C .devbin
    GGML_VK_PERF_LOGGER=1 device_bench "$n" "$l" --shaders "${TREE:-shaders}" --ggml ".devbin/ggml-$v" --config "$c" "$@"
}

device_pack() {
    tar czf "$OUT_DIR/logs.tgz" -C "$OUT_DIR" logs
}
