# Developer entry points. `make test` is what CI runs; `make demo` shows the
# case study. Every target is idempotent: stamp files make a second run cheap.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
CPP_BUILD := build-cpp-tests
CPP_BUILD_TYPE ?= RelWithDebInfo
JOBS ?= 2

# cmake/ninja installed into the venv (when the system lacks them) come first.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# One kernel cache for every test run of this checkout, so repeated runs reuse
# compiled kernels instead of invoking the C++ compiler again.
export TEGULA_CACHE_DIR ?= $(CURDIR)/.cache/tegula

PY_DEPS := nanobind scikit-build-core numpy pytest pytest-xdist ml_dtypes hypothesis

# Everything whose change means the extension must be rebuilt.
BUILD_INPUTS := $(shell find src -type f 2>/dev/null) CMakeLists.txt pyproject.toml

SYSDEPS_STAMP := $(VENV)/.stamp-sysdeps
VENV_STAMP := $(VENV)/.stamp-venv
BUILD_STAMP := $(VENV)/.stamp-build

.PHONY: all venv build cpp-test py-test test demo gpu-check clean

all: build

venv: $(VENV_STAMP)

# System packages, only when something is missing and we may install it.
$(SYSDEPS_STAMP):
	@missing=""; \
	[ -f /usr/include/gtest/gtest.h ] || missing="$$missing libgtest-dev"; \
	[ -n "$$(ls /usr/include/sleef.h /usr/include/*/sleef.h 2>/dev/null)" ] || missing="$$missing libsleef-dev"; \
	command -v ccache >/dev/null || missing="$$missing ccache"; \
	command -v ninja >/dev/null || missing="$$missing ninja-build"; \
	command -v g++ >/dev/null || missing="$$missing g++"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing system packages:$$missing"; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	  else \
	    echo "warning: missing system packages:$$missing (not root: install them yourself)"; \
	  fi; \
	fi
	@mkdir -p $(VENV) && touch $@

$(VENV_STAMP): $(SYSDEPS_STAMP) Makefile
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	@extra=""; \
	command -v ninja >/dev/null || extra="$$extra ninja"; \
	$(PYTHON) -c 'import re,subprocess,sys; \
	  v=subprocess.run(["cmake","--version"],capture_output=True,text=True).stdout; \
	  m=re.search(r"(\d+)\.(\d+)",v); \
	  sys.exit(0 if m and (int(m[1]),int(m[2]))>=(3,20) else 1)' 2>/dev/null || extra="$$extra cmake"; \
	echo "installing Python packages: $(PY_DEPS)$$extra"; \
	$(PIP) install $(PY_DEPS) $$extra
	@touch $@

build: $(BUILD_STAMP)

# Editable install: Python files are used in place; the extension and the CLI
# are rebuilt incrementally in build/<wheel tag>.
$(BUILD_STAMP): $(VENV_STAMP) $(BUILD_INPUTS)
	$(PIP) install --no-build-isolation -e .
	@touch $@

cpp-test: $(SYSDEPS_STAMP)
	cmake -S . -B $(CPP_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(CPP_BUILD_TYPE) >/dev/null
	cmake --build $(CPP_BUILD) -j $(JOBS)
	ctest --test-dir $(CPP_BUILD) --output-on-failure -j $(JOBS)

PY_TEST_DIRS := tests/python $(wildcard tests/compat)

py-test: build
	$(PY) -m pytest -n $(JOBS) -q $(PY_TEST_DIRS)

# Both suites always run, so one failing layer does not hide the other's results.
test: venv build
	@status=0; \
	$(MAKE) --no-print-directory cpp-test || status=1; \
	$(MAKE) --no-print-directory py-test || status=1; \
	exit $$status

demo: venv build
	$(PY) -m tegula.demo

# On the GPU machine: offline and without our venv, so it builds with that
# machine's python3 (torch, triton, nanobind... preinstalled) and skips `venv`.
# Builds, runs the C++ and Python tests on the GPU, the benchmarks and the demo;
# logs and bench.json go to $OUT (default ./gpu-check-out). See the script.
GPU_PY ?= python3
gpu-check:
	PY=$(GPU_PY) tools/gpu_check.sh

clean:
	rm -rf build/cp* $(CPP_BUILD) .cache .pytest_cache $(BUILD_STAMP)
	find python tests examples -name __pycache__ -type d -prune -exec rm -rf {} +
