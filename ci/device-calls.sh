# Helpers for one-off device scripts (docs/plans/*, docs/runs/*/sNNx.sh), sourced on the GPU
# machine from the repository root as `source ci/device-calls.sh "$OUT" || exit 1` (the call's
# $OUT): it readies the machine (.gl/on-device.sh), then each helper writes its log under
# $LOGS (OUT/logs) and prints a short summary for the device reply's tail. Trees: $U
# (upstream's, from `ci/gpu.sh stage`) and $T/NAME (from `ci/stage-trees.sh`).
#   device_run NAME LIMIT TREE [vkdiff run args]   cases of the shader tree TREE (QUIET=1: no
#                                                  line per variant, only the summary)
#   device_bench NAME LIMIT [vkdiff bench args]    bench rows, starting none after LIMIT s
V=${V:-.devbin/vkdiff}
U=.devbin/upstream-shaders
T=.devbin/trees
LOGS=${1:?usage: source ci/device-calls.sh OUT}/logs
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
