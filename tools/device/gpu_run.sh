#!/usr/bin/env bash
# One prepared run on a lent GPU machine (no network there): install the carried
# loaders, tools and wheels, list the devices, run the conformance suite (Vulkan
# under the Khronos validation layer), the benchmarks per device, and the
# OpenCL/Vulkan provider test suites against the GPU. Every step is bounded by
# what is left of BUDGET_S seconds and goes on when an earlier one failed.
#
#   tools/device/gpu_run.sh OUTDIR [BUDGET_S]
#
# Expects, in the repository root (docs/gpu.md says how they are made here):
#   .debs/  Debian 12 packages: libvulkan1 ocl-icd-libopencl1 and the glvnd
#           libraries (unpacked into /), spirv-tools glslang-tools clinfo
#           vulkan-validationlayers (unpacked into /tmp/deb)
#   .whl/   cp312 wheels: pyopencl pytools platformdirs siphash24 cffi pycparser
#           vulkan wgpu rendercanvas, and accelcore itself
# STEPS (default: devices conformance bench-opencl bench-vulkan pytest; also
# bench=SELECTOR, e.g. bench='*nvidia*', and probe and pytest-vulkan, the
# diagnostics of docs/gpu.md) picks what runs.
# SKIP_INSTALL=1 uses whatever python3 and tools are already on PATH, and
# BENCH_QUICK=1 passes --quick to the benchmarks (a dry run on a build machine).
#
# Writes into OUTDIR (the device tool brings back at most 8 files): log.txt,
# facts.txt, and per step devices.json, conformance.json, bench-PROVIDER.json,
# pytest.xml, track-*.tsv.
set -u
OUT=${1:?usage: gpu_run.sh OUTDIR [BUDGET_S]}
BUDGET=${2:-480}
STEPS=${STEPS:-devices conformance bench-opencl bench-vulkan pytest}
START=$SECONDS
mkdir -p "$OUT"

left() { echo $((BUDGET - (SECONDS - START))); }
step() { echo; echo "=== [$((SECONDS - START)) s, $(left) s left] $*"; }
# bounded CMD...: run CMD with a timeout of what is left minus a reserve.
bounded() {
    local reserve=$1 cap=$2; shift 2
    local t=$(( $(left) - reserve ))
    (( t > cap )) && t=$cap
    if (( t < 10 )); then echo "skipped (only $(left) s left): $*"; return 99; fi
    echo "+ (timeout ${t}s) $*"
    timeout --kill-after=5 "$t" "$@"
    local rc=$?
    echo "exit status $rc"
    return $rc
}

install() {
    step "install carried loaders, tools and wheels"
    for f in .debs/libvulkan1_*.deb .debs/ocl-icd-libopencl1_*.deb .debs/libglvnd0_*.deb \
             .debs/libegl1_*.deb .debs/libopengl0_*.deb .debs/libgl1_*.deb .debs/libglx0_*.deb \
             .debs/libgles2_*.deb; do
        dpkg -x "$f" / || echo "could not unpack $f"
    done
    ldconfig
    mkdir -p /tmp/deb
    for f in .debs/spirv-tools_*.deb .debs/glslang-tools_*.deb .debs/clinfo_*.deb \
             .debs/vulkan-validationlayers_*.deb; do
        dpkg -x "$f" /tmp/deb || echo "could not unpack $f"
    done
    export PATH=/tmp/deb/usr/bin:$PATH
    export LD_LIBRARY_PATH=/tmp/deb/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export VK_LAYER_PATH=/tmp/deb/usr/share/vulkan/explicit_layer.d
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || { echo "wheel install failed"; return 1; }
    export PYTHONPATH=/tmp/site
    export PATH=/tmp/site/bin:$PATH

    step "NVIDIA OpenCL ICD"
    local lib
    lib=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib/libnvidia-opencl.so.1 \
             /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
    if [ -z "$lib" ]; then
        lib=$(timeout 20 find /usr /opt -name 'libnvidia-opencl.so*' 2>/dev/null | head -n 1)
    fi
    echo "libnvidia-opencl: ${lib:-not found}"
    ls /etc/OpenCL/vendors 2>/dev/null
    if [ -n "$lib" ] && ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
        mkdir -p /etc/OpenCL/vendors && echo "$lib" > /etc/OpenCL/vendors/nvidia.icd
        echo "wrote /etc/OpenCL/vendors/nvidia.icd -> $lib"
    fi

    step "NVIDIA Vulkan ICD"
    ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d 2>/dev/null
    if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1 \
       && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
        export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
        echo "VK_DRIVER_FILES=$VK_DRIVER_FILES"
    fi
}

facts() {
    step "facts"
    {
        date -u +%Y-%m-%dT%H:%M:%SZ
        uname -a
        nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv 2>&1
        python3 --version
        python3 -c 'import numpy, pyopencl, vulkan, wgpu; print("numpy", numpy.__version__, "pyopencl", pyopencl.VERSION_TEXT, "wgpu", wgpu.__version__)' 2>&1
        echo "--- clinfo -l"; clinfo -l 2>&1
        echo "--- clinfo (IL, versions, extensions)"
        clinfo 2>&1 | grep -E -i 'platform name|device name|driver version|device version|IL version|ILs with|cl_khr_il_program|max work group size|max memory allocation' | head -40
        echo "--- spirv-val / glslangValidator"; spirv-val --version 2>&1 | head -n 2; glslangValidator --version 2>&1 | head -n 2
        echo "--- validation layer"; ls "${VK_LAYER_PATH:-/nonexistent}" 2>&1
    } > "$OUT/facts.txt" 2>&1
    cat "$OUT/facts.txt"
}

main() {
    if [ -z "${SKIP_INSTALL:-}" ]; then install || return 1; fi
    # accelcore is installed from a wheel there: point it at this checkout's kernel corpus.
    export ACCELCORE_ARTIFACTS=$PWD/artifacts
    facts
    set -f  # STEPS may hold selector globs (bench='*nvidia*')
    for s in $STEPS; do
        case $s in
        devices)
            step "devices"
            bounded 0 60 accel devices --json > "$OUT/devices.json"
            bounded 0 60 accel devices -v ;;
        conformance)
            step "conformance (Vulkan under the validation layer)"
            bounded 60 150 env ACCEL_VULKAN_VALIDATION=1 accel conformance --reasons --device-timeout 120s \
                --json "$OUT/conformance.json" ;;
        bench-*|bench=*)
            # bench-PROVIDER, or bench=SELECTOR (any accel device selector, e.g. bench='*nvidia*')
            local sel=${s#bench[-=]}
            local name
            name=$(printf '%s' "$sel" | tr -c 'A-Za-z0-9' '_')
            step "bench $sel"
            bounded 60 200 accel bench "$sel" ${BENCH_QUICK:+--quick} --json "/tmp/bench-$name/results.json" \
                --plot "/tmp/bench-$name"
            cp "/tmp/bench-$name/results.json" "$OUT/bench-$name.json" 2>/dev/null \
                || echo "no bench results for $sel" ;;
        probe)
            step "Vulkan instance probe"
            bounded 30 90 python3 tools/device/vk_instance_probe.py 100 64 ;;
        pytest-vulkan)
            step "Vulkan provider tests alone, tracked"
            ACCEL_TRACK_FILE=$OUT/track-vulkan.tsv PYTHONPATH=$PYTHONPATH:$PWD/tools/device \
                bounded 30 120 python3 -m pytest tests/vulkan -q -p no:cacheprovider -p pytest_track --timeout 60 \
                -o addopts='--strict-markers --import-mode=importlib' -rfEs ;;
        pytest)
            step "provider test suites on the GPU, tracked"
            ACCEL_TRACK_FILE=$OUT/track-all.tsv PYTHONPATH=$PYTHONPATH:$PWD/tools/device \
                bounded 5 200 python3 -m pytest tests/opencl tests/vulkan -q -p no:cacheprovider -p pytest_track \
                --timeout 60 -o addopts='--strict-markers --import-mode=importlib' -rfEs --junitxml "$OUT/pytest.xml" ;;
        *) echo "unknown step $s" ;;
        esac
    done
    step "done"
}

main 2>&1 | tee "$OUT/log.txt"
