#!/usr/bin/env bash
# Run in session 35 as part of its call 1 (docs/plans/device-s35; results in docs/bench.md, session 35). Here,
# from the repository root, after `UPSTREAM=0.1.109 bash ci/gpu.sh stage`: makes .devbin/trees/NAME
# from shaders/ and NAME.patch (against shaders/ at this commit) and copies s34a.sh to
# .devbin/; then on the device (carry .gl and .devbin) `bash .devbin/s34a.sh $OUT`.
set -euo pipefail
here=$(dirname "$0")
for p in "$here"/*.patch; do
    t=.devbin/trees/$(basename "$p" .patch)
    rm -rf "$t" && mkdir -p "$(dirname "$t")" && cp -r shaders "$t"
    (cd "$t" && patch -s -p1 < "$OLDPWD/$p")
done
cp "$here/s34a.sh" .devbin/
