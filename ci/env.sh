# Sourced by the ci/ scripts: one persistent build folder outside the clone, so a fresh clone
# reuses the slow shaderc C++ build (about 10 minutes on 2 cores) from earlier runs.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/vkdiff-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
