#!/usr/bin/env bash
# Usage: tools/import_check.sh PYTHON MODULE...
# Imports each freshly installed MODULE once. A byte-code file cut short
# (a write that ran out of disk space) makes every later import fail with
# "marshal data too short" or "bad magic number"; such files are removed and
# the import retried once, so the next import compiles from source. Anything
# else fails with the error and the free space of the environment's disk.
set -uo pipefail
py=$1; shift
status=0
for module in "$@"; do
  if err=$("$py" -c "import $module" 2>&1); then continue; fi
  dir=$("$py" -c "import importlib.util as u, os; s = u.find_spec('$module'); \
print(os.path.dirname(s.origin) if s and s.origin else '')" 2>/dev/null)
  if [ -n "$dir" ] && grep -qE 'marshal data too short|bad marshal data|bad magic number' <<<"$err"; then
    echo "import-check: $module has damaged byte-code files under $dir; removing its __pycache__ folders"
    find "$dir" -type d -name __pycache__ -prune -exec rm -rf {} +
    err=$("$py" -c "import $module" 2>&1) && continue
  fi
  echo "$err" | tail -n 5
  echo "import-check: 'import $module' fails in $py after installing it."
  echo "import-check: free space where it is installed:"
  df -h "$(dirname "$py")" | tail -n 1
  echo "import-check: free some disk space, then remove $(dirname "$(dirname "$py")") and run make again."
  status=1
done
exit $status
