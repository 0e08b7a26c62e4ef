#!/usr/bin/env bash
# The main job: install, build, and run the differential campaign on the default device
# (a discrete GPU if there is one, otherwise lavapipe). Extra arguments go to `vkdiff run`,
# e.g. `bash ci/campaign.sh --cases 1000 -o wkv7`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install.sh
source ci/env.sh
cargo run --release --quiet -- run "$@"
