#!/usr/bin/env bash
# Build the kit a GPU machine without network needs (docs/gpu.md), in the ignored folder
# .gpuwork/repo of this checkout: a snapshot of a commit, the Debian packages (.debs) and the
# cp312 wheels plus accelcore's own wheel (.whl). Then, on the GPU machine, from .gpuwork/repo:
#   STEPS="devices conformance bench=*nvidia* pytest" bash tools/device/gpu_run.sh OUTDIR 400
#
#   tools/device/prepare_kit.sh [COMMIT]     (default HEAD; needs network here, Debian 12)
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=${1:-HEAD}
python=${PYTHON:-.venv/bin/python}
grep -qx '/.gpuwork/' .git/info/exclude 2>/dev/null || echo '/.gpuwork/' >> .git/info/exclude

kit=.gpuwork/repo
rm -rf "$kit" && mkdir -p "$kit"
git archive "$commit" | tar -x -C "$kit"
echo "snapshot of $(git rev-parse --short "$commit") in $kit"

mkdir -p "$kit/.debs"
(cd "$kit/.debs" && apt-get download libvulkan1 ocl-icd-libopencl1 libglvnd0 libegl1 libopengl0 libgl1 \
    libglx0 libgles2 spirv-tools glslang-tools clinfo vulkan-validationlayers)

# The GPU image runs CPython 3.12; versions pinned to what the project is tested with.
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$kit/.whl" \
    pyopencl==2026.1.4 pytools==2026.1.1 platformdirs siphash24 cffi pycparser \
    vulkan==1.3.275.1 wgpu==0.32.0 rendercanvas
"$python" -m pip wheel -q --no-deps -w "$kit/.whl" "$kit"
rm -rf "$kit/build" "$kit"/*.egg-info
du -sh .gpuwork
ls "$kit/.debs" "$kit/.whl"
