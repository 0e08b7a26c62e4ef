#!/usr/bin/env bash
# Not run yet: no device was lent in session 33 (docs/plans/device-s33/). Here, from the repository root, after
# `bash ci/gpu.sh stage` with UPSTREAM=0.1.109: makes each copy .devbin/trees/NAME from
# shaders/ and patches/NAME.patch, and copies s33a.sh to .devbin/; then on the device (carry
# .gl and .devbin) `bash .devbin/s33a.sh $OUT`. The patches apply to shaders/ at c504d8d.
set -euo pipefail
here=$(dirname "$0")
for p in "$here"/patches/*.patch; do
    t=.devbin/trees/$(basename "$p" .patch)
    rm -rf "$t" && mkdir -p "$(dirname "$t")" && cp -r shaders "$t"
    (cd "$t" && patch -s -p2 < "$OLDPWD/$p")
done
cp "$here/s33a.sh" .devbin/
