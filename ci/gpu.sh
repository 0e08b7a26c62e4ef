#!/usr/bin/env bash
# The GPU run, end to end. The GPU machine has a Vulkan driver but no Rust toolchain and no
# Vulkan loader, so the work is split: this machine builds and stages, the GPU machine runs.
#
# 1. Prepare (here, once): the Vulkan loader and validation layer for the GPU machine go into
#    .gl/ (with .gl/on-device.sh, which unpacks them there). `stage` does this itself when
#    .gl/on-device.sh is missing, with ../shared/device/prepare.sh.
# 2. Stage (here): build, strip the binary into .devbin/.
#      bash ci/gpu.sh stage
#      UPSTREAM=0.1.109 bash ci/gpu.sh stage          # + upstream's shader tree, for --against
#      GGML="0.1.109 0.1.161" bash ci/gpu.sh stage    # + ggml's own backend, built per tree
#      GGML="/src/ggml-a /src/ggml-b" bash ci/gpu.sh stage  # (or a checkout's folder)
#    A shader experiment (patched trees and scripts) is staged on top with ci/stage-trees.sh.
# 3. Run (there): copy the working tree to the GPU machine together with the ignored folders
#    .gl and .devbin (64 MiB at most; stage prints their size), then, from the repository root:
#      bash ci/gpu.sh campaign OUT [vkdiff run args]  # validated campaign of every kernel, then
#                                                     # `vkdiff bench`; logs under OUT
#      bash ci/gpu.sh bench OUT [vkdiff bench args]   # only the bench, e.g.
#                                                     # --against .devbin/upstream-shaders
#      bash ci/gpu.sh ggml OUT [vkdiff run args]      # backend mode over every staged ggml tree
#    or any `bash .gl/on-device.sh .devbin/vkdiff ...` command. These refuse to run anywhere
#    but the GPU machine (ci/gpu-machine.sh).
# 4. Read the result: OUT/campaign.log (the tail is printed), OUT/campaign/report.html and
#    repro/, OUT/bench.log; `vkdiff report OUT/campaign/report.jsonl` regroups the findings here.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
ggml | campaign | bench) source ci/gpu-machine.sh || exit 1 ;;
esac
case "${1:-}" in
stage)
    bash ci/install.sh # shaderc's from-source build needs cmake and ninja
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
    # Unpacked copies (from a local `ci/gpu.sh ggml`) would be carried twice.
    [ -z "${GGML:-}" ] || rm -rf .devbin/ggml-*/ .devbin/ggml-*.tgz
    for v in ${GGML:-}; do
        # A registry version, or a ggml checkout's folder (packed under the folder's name).
        if [ -d "$v" ]; then
            tree=$v
            v=$(basename "$v")
        else
            tree=$(bash ci/upstream-tree.sh "$v")
        fi
        # Builds once per tree (cached in ~/.cache/vkdiff-ggml); --cases 0 runs nothing.
        said=$("$CARGO_TARGET_DIR/release/vkdiff" run --ggml "$tree" -o wkv7 --cases 0 \
            --config scalar-fp32 --out "$(mktemp -d)" 2>&1 || true)
        lib=$(sed -n 's/^ggml: tree .* uses the libraries in \(.*\) (build .*)$/\1/p' <<< "$said")
        [ -n "$lib" ] || { echo "ci/gpu.sh: no ggml build for $v" >&2; exit 1; }
        pack=$(mktemp -d)/ggml-$v
        mkdir -p "$pack"
        # Flat, named by soname: vkdiff loads libggml-base from the folder before the backend.
        cp -L "$lib/libggml-vulkan.so" "$pack/libggml-vulkan.so"
        for b in "$lib"/../libggml-base.so*; do
            soname=$(readelf -d "$b" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
            cp -L "$b" "$pack/${soname:-libggml-base.so}"
            break
        done
        # Debug info goes; the symbol table stays (vkdiff names the SPIR-V modules a case
        # dispatched from ggml's `<name>_data` symbols there: pipeline coverage).
        strip --strip-debug "$pack"/*.so*
        # Its ggml.h: vkdiff reads GGML_KQ_MASK_PAD from it (0.1.109 asserts the mask pad).
        # (a llama.cpp tree holds ggml under ggml/, a ggml checkout is the root itself).
        header=$tree/ggml/include/ggml.h
        [ -f "$header" ] || header=$tree/include/ggml.h
        cp "$header" "$pack/ggml.h"
        # What the tree is (its version and upstream changes), read here from its source: the
        # known findings scoped by revision then apply to the packed libraries too.
        sed -n 's/^device: .* ggml [^ ]* \[\(.*\)\] config .*/\1/p' <<< "$said" | head -1 \
            > "$pack/vkdiff-identity.txt"
        tar czf ".devbin/ggml-$v.tgz" -C "$(dirname "$pack")" "ggml-$v"
        rm -rf "$(dirname "$pack")"
        echo "ci/gpu.sh: staged ggml $v from $lib as .devbin/ggml-$v.tgz ($(du -h ".devbin/ggml-$v.tgz" | cut -f1))"
    done
    echo "ci/gpu.sh: staged .devbin/vkdiff ($(du -h .devbin/vkdiff | cut -f1)); carry .gl and .devbin ($(du -sh .gl .devbin | awk '{print $1}' | paste -sd+) of 64 MiB)"
    ;;
ggml)
    # Backend mode over every staged tree (.devbin/ggml-*.tgz), side by side (GPU machine: 16
    # cores, one H100), each stopped after GGML_SECONDS (default 520: one device call is 600 s)
    # with what it judged kept (the report is written as results arrive and rebuilt by `vkdiff
    # report`), then the verdicts that differ between the first two trees:
    # OUT/ggml-VERSION/{report.jsonl,repro/}, OUT/ggml-VERSION{.log,.findings.txt}, OUT/diff.txt.
    out="${2:?usage: ci/gpu.sh ggml OUT [vkdiff run args]}"
    shift 2
    mkdir -p "$out"
    export VKDIFF_SHADERS="${VKDIFF_SHADERS:-$PWD/shaders}"
    # Unpack the loader once (on-device.sh), then start both runs with its environment: two
    # on-device.sh side by side would unpack over each other.
    bash .gl/on-device.sh true
    export VK_DRIVER_FILES=${VK_DRIVER_FILES:-$GPU_MACHINE_ICD}
    export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
    versions=()
    for t in .devbin/ggml-*.tgz; do
        v=$(basename "$t" .tgz)
        tar xzf "$t" -C .devbin
        versions+=("$v")
        # The checkout's known list (the binary's built-in path is not on this machine).
        timeout "${GGML_SECONDS:-520}" .devbin/vkdiff run --ggml ".devbin/$v" \
            --known known-findings.txt --out "$out/$v" "$@" > "$out/$v.log" 2>&1 &
    done
    # Exit statuses are collected, not fatal (1: new findings).
    set +e
    wait
    status=0
    for v in "${versions[@]}"; do
        .devbin/vkdiff report "$out/$v/report.jsonl" --known known-findings.txt \
            > "$out/$v.findings.txt" 2>&1
        status=$((status | $?))
        r="$out/$v/report.jsonl"
        echo "== $v: $(grep -c '"type":"case"' "$r") cases judged, $(grep -c '"outcome":"pass"' "$r") passed, $(grep -c '"type":"variant"' "$r") variant runs finished"
        grep -E "distinct findings|^#[0-9]+ |^  minimal|^STALE" "$out/$v.findings.txt" || true
    done
    if ((${#versions[@]} >= 2)); then
        .devbin/vkdiff diff "$out/${versions[0]}/report.jsonl" "$out/${versions[1]}/report.jsonl" \
            > "$out/diff.txt" 2>&1 || true
        tail -n 3 "$out/diff.txt"
    fi
    exit "$status"
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
    sed -n '2,23p' "$0"
    exit 2
    ;;
esac
