#!/usr/bin/env bash
# `make wheel-test`: the wheel in dist/ installed into a fresh virtual
# environment, used from a folder outside the source tree as a user would:
# the `tegula` command on PATH (the native binary: milliseconds), the package
# importing its own extension, and two examples checked against NumPy on the
# CPU backend (a fresh kernel cache, so the installed compiler really runs),
# or on the GPU where torch sees one (the examples run where their arrays
# live). WHEEL_TEST_OFFLINE=1 (the GPU machine): the environment sees the
# system's packages (numpy, torch) and pip downloads nothing; a wheel that
# auditwheel has not repaired is accepted there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIST="${1:-$ROOT/dist}"
PYTHON="${PYTHON:-python3}"
OFFLINE="${WHEEL_TEST_OFFLINE:-0}"
if [ "$OFFLINE" = 1 ]; then wheels=("$DIST"/tegula-*.whl); else wheels=("$DIST"/tegula-*manylinux*.whl); fi
[ -f "${wheels[0]}" ] || { echo "wheel-test: no wheel in $DIST (make wheel)"; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
if [ "$OFFLINE" = 1 ]; then
  "$PYTHON" -m venv --system-site-packages "$WORK/venv"
  # $PYTHON may itself be a virtual environment's: its packages come along
  # through a .pth file (after the new environment's own, so the wheel wins).
  site="$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  "$PYTHON" -c 'import site, sys; print("\n".join(p for p in site.getsitepackages() if "site-packages" in p))' \
    >"$site/zz_parent_environment.pth"
  "$WORK/venv/bin/python" -m pip --disable-pip-version-check -q install --no-deps --no-index "${wheels[-1]}"
else
  "$PYTHON" -m venv "$WORK/venv"
  "$WORK/venv/bin/python" -m pip --disable-pip-version-check -q install "${wheels[-1]}"
fi
cp "$ROOT/examples/_cli.py" "$ROOT/examples/_host.py" "$ROOT/examples/vector_add.py" "$ROOT/examples/softmax.py" "$WORK/"
cp -r "$ROOT/examples/cpp" "$WORK/cpp"
cd "$WORK"
export TEGULA_CACHE_DIR="$WORK/cache" PATH="$WORK/venv/bin:$PATH"
[ "$(command -v tegula)" = "$WORK/venv/bin/tegula" ] || { echo "wheel-test: tegula is not on PATH"; exit 1; }
start=$(date +%s%N)
tegula version
took_ms=$((($(date +%s%N) - start) / 1000000))
echo "wheel-test: 'tegula version' took ${took_ms} ms"
((took_ms < 200)) || { echo "wheel-test: the tegula command is slow (${took_ms} ms)"; exit 1; }
python - <<'PY'
import pathlib, tegula
where = pathlib.Path(tegula.__file__).resolve()
assert "venv" in where.parts, f"tegula imported from {where}, not from the installed wheel"
print("wheel-test: tegula", tegula.__version__, "from", where.parent)
PY
python vector_add.py
python softmax.py
# The C++ API from the installed package: find_package(Tegula), build, run.
cmake -S cpp -B cpp-build -DTegula_DIR="$(python -c 'import tegula; print(tegula.cmake_dir())')" >cmake.log 2>&1 ||
  { cat cmake.log; exit 1; }
cmake --build cpp-build >>cmake.log 2>&1 || { cat cmake.log; exit 1; }
cpp-build/vector_add
cpp-build/vector_add_aot
echo "wheel-test: ok"
