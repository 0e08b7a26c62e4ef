#!/usr/bin/env bash
# Injected bugs in the cm1 matmul path (mul_mm.comp with COOPMAT), for issue #16: each is a copy
# of shaders/ with one line changed, to run with `vkdiff run --shaders DIR` on a device with KHR
# cooperative matrices (docs/mul-mm-cm1.md has the commands and what each should show).
#   bash ci/cm1-mutants.sh OUT    # writes OUT/store-row and OUT/k-tail
# Only the cm1 branch of mul_mm.comp is touched (the scalar store and K loop are other lines), so
# the scalar rows are unaffected; the script fails if a pattern does not match exactly once.
# Plain bash + coreutils + grep: it also runs on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: ci/cm1-mutants.sh OUT}"

mutant() { # name, from, to
    local dir="$out/$1" n text
    rm -rf "$dir"
    mkdir -p "$dir"
    cp -a shaders/. "$dir/"
    n=$(grep -cF -- "$2" "$dir/mul_mm.comp" || true)
    [ "$n" = 1 ] || { echo "cm1-mutants.sh: '$2' occurs $n times in mul_mm.comp" >&2; exit 1; }
    text=$(<"$dir/mul_mm.comp")
    printf '%s\n' "${text/"$2"/"$3"}" > "$dir/mul_mm.comp"
    echo "$dir: mul_mm.comp:$(grep -nF -- "$3" "$dir/mul_mm.comp")"
}

# Off-by-one tile bound: the store also writes row M of a partial row tile (its staged A rows
# are zero, so D(M, c) = 0 lands on D(0, c + 1), or past the batch).
mutant store-row "if (cm1_row < p.M && cm1_col < n_cols) {" "if (cm1_row <= p.M && cm1_col < n_cols) {"
# The last, partial TK step of a K range is skipped (K or a split's range not a multiple of 16).
mutant k-tail "kk < BK && block_k + kk < end_k;" "kk < BK && block_k + kk + TK <= end_k;"
