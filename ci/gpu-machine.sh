# Sourced (`source ci/gpu-machine.sh || exit 1`) by every script here that runs .gl/on-device.sh:
# ci/gpu.sh's ggml, campaign and bench, and ci/device-calls.sh. on-device.sh unpacks .gl's
# packages into / (Debian 13's validation layer among them, which needs glibc 2.38: over a
# Debian 12 CPU machine's layer, every validated test fails to create an instance), so they run
# only where on-device.sh finds the NVIDIA driver's ICD.
GPU_MACHINE_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ ! -e "$GPU_MACHINE_ICD" ]; then
    echo "$0: for the GPU machine only (no $GPU_MACHINE_ICD; .gl/on-device.sh would overwrite this machine's Vulkan layers)" >&2
    return 1
fi
