# All targets set themselves up, idempotently, on a fresh Debian 12 machine (as root).
#   make run   - set up, list every device, run the conformance suite on every device
#   make test  - set up, lint, type-check, run the tests
#   make test-fast - the edit loop: the contract, kernels, engine and architecture tests (no lint)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .stamps

# Debian 12 packages: Python with venv (Debian strips ensurepip from python3), the three real
# driver stacks (PoCL, Mesa rusticl, Mesa lavapipe) and the tools around them (docs/opencl.md,
# docs/vulkan.md). clang-15 / llvm-spirv-15 are bookworm's names.
DEBIAN_PACKAGES := python3 python3-venv \
	pocl-opencl-icd ocl-icd-libopencl1 mesa-opencl-icd \
	mesa-vulkan-drivers libvulkan1 vulkan-tools vulkan-validationlayers \
	glslang-tools spirv-tools clinfo clang-15 llvm-spirv-15

# rusticl hides its llvmpipe device unless asked for.
export RUSTICL_ENABLE ?= swrast
export XDG_RUNTIME_DIR ?= /tmp

PYTEST_ARGS ?=
# pytest-xdist: one worker per core, a test file's tests on one worker (they share its module fixtures and
# files). PYTEST_WORKERS=0 runs everything in this process.
PYTEST_WORKERS ?= auto
PYTEST_PARALLEL := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

# Intel's oneAPI OpenCL CPU runtime (extra [intel], x86-64 Linux only) lives in the venv, and so does its
# registration: $(INTEL_ICD) holds the absolute path of the venv's libintelocl.so (its RUNPATH finds the rest; no
# LD_LIBRARY_PATH), in a vendors folder the checkout owns, next to links to the system's ICDs (accelcore keeps
# them current: accelcore/devices/opencl_vendors.py). Nothing goes to /etc, so clones on one machine do not take
# the device from each other. The project's processes (accel, accelcore.devices()/open(), the tests, their
# workers) set OCL_ICD_VENDORS to the folder unless it is set; other tools see the device with
# `OCL_ICD_VENDORS=$PWD/.venv/etc/accelcore/OpenCL/vendors clinfo -l`.
# Older versions wrote $(LEGACY_ICD): removed when it names this checkout's library or a missing one, else left
# for the clone that still relies on it. SYSTEM_VENDORS is the folder the ICD loader reads by default.
SYSTEM_VENDORS := $(or $(OPENCL_VENDOR_PATH),/etc/OpenCL/vendors)
CHECKOUT_VENDORS := $(abspath $(VENV))/etc/accelcore/OpenCL/vendors
INTEL_ICD := $(CHECKOUT_VENDORS)/accelcore-intel-cpu.icd
LEGACY_ICD := $(SYSTEM_VENDORS)/accelcore-intel-cpu.icd
INTEL_LIB := $(abspath $(VENV))/lib/libintelocl.so

.PHONY: setup debian intel-icd run test test-fast lint typecheck pytest artifacts bench clean

# The line to paste: `accel` and the `accelcore` package live in .venv, which is not on PATH (README.md).
NEXT_STEP := echo "accel and the accelcore package are in $(VENV), not on PATH; to use them in this shell, paste:"; \
	echo "    . $(VENV)/bin/activate"

setup: debian $(STAMPS)/venv intel-icd
ifeq ($(filter-out setup,$(MAKECMDGOALS)),)
	@$(NEXT_STEP)
endif

# Checked on every run (a dpkg query, well under a second): a package removed since is reinstalled.
debian:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
		for try in 1 2 3; do $$SUDO apt-get update -q && break; echo "apt-get update failed; retrying"; sleep 10; done; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(VENV)/pyvenv.cfg:
	$(PYTHON) -m venv $(VENV)

# A venv without a working pip (e.g. made before python3-venv was installed) is made again.
$(STAMPS)/venv: pyproject.toml $(VENV)/pyvenv.cfg
	@mkdir -p $(STAMPS)
	@$(BIN)/python -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[opencl,vulkan,cli,bench,dev]'
	@rm -f $(STAMPS)/intel-absent; \
	if [ "$$(uname -sm)" != "Linux x86_64" ]; then \
		echo "Intel's OpenCL CPU runtime has wheels for x86-64 Linux only, not $$(uname -sm)" > $(STAMPS)/intel-absent; \
	elif ! $(BIN)/python -m pip install -q -e '.[intel]'; then \
		echo "pip could not install the extra [intel] (intel-opencl-rt, intel-cmplr-lib-rt) from PyPI" > $(STAMPS)/intel-absent; \
	fi
	@touch $@

# Idempotent, no root needed: writes $(INTEL_ICD) only when its content differs and links the system's ICDs
# beside it; says why the Intel device is absent. Then the migration from $(LEGACY_ICD) (above).
intel-icd: $(STAMPS)/venv
	@if [ -f $(INTEL_LIB) ]; then \
		if [ "$$(cat $(INTEL_ICD) 2>/dev/null)" != "$(INTEL_LIB)" ]; then \
			echo "registering Intel's OpenCL CPU runtime: $(INTEL_ICD) -> $(INTEL_LIB)"; \
			mkdir -p $(CHECKOUT_VENDORS) && echo "$(INTEL_LIB)" > $(INTEL_ICD).tmp && mv -f $(INTEL_ICD).tmp $(INTEL_ICD); \
		fi; \
		$(BIN)/python -c 'from accelcore.devices.opencl_vendors import opencl_vendors; opencl_vendors()'; \
	else \
		rm -f $(INTEL_ICD); \
		echo "note: no Intel OpenCL CPU device: $$(cat $(STAMPS)/intel-absent 2>/dev/null || echo "$(INTEL_LIB) is missing")" \
			"(the other stacks are unaffected; docs/opencl.md)"; \
	fi
	@if [ -f $(LEGACY_ICD) ]; then \
		named=$$(cat $(LEGACY_ICD)); \
		if [ "$$named" = "$(INTEL_LIB)" ] || [ ! -e "$$named" ]; then \
			if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
			echo "removing $(LEGACY_ICD), where older versions registered Intel's runtime (it names $$named)"; \
			$$SUDO rm -f $(LEGACY_ICD); \
		else \
			echo "note: left $(LEGACY_ICD) in place: it names $$named, another checkout's Intel runtime, registered" \
				"there by an older version; that checkout relies on it until its own make setup (docs/opencl.md)"; \
		fi; \
	fi

run: export ACCEL_VULKAN_VALIDATION ?= 1
CONFORMANCE_REPORTS := --json build/conformance.json --junit build/conformance.xml --html build/conformance.html

# The matrix ends the output, then the line to paste (also after a failing run, whose status is kept).
run: setup
	$(BIN)/accel devices
	@mkdir -p build
	@echo "$(BIN)/accel conformance $(CONFORMANCE_REPORTS)"; \
	$(BIN)/accel conformance $(CONFORMANCE_REPORTS); status=$$?; \
	$(NEXT_STEP); exit $$status

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check accelcore providers tools tests

typecheck: setup
	$(BIN)/mypy

pytest: setup
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

test-fast: setup
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) -m "not slow" tests/core tests/engine $(PYTEST_ARGS)

test: lint typecheck pytest

artifacts: setup
	$(BIN)/python tools/build_artifacts.py

bench: setup
	$(BIN)/accel bench --json docs/benchmarks/results.json --plot docs/benchmarks

clean:
	rm -rf $(STAMPS) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
