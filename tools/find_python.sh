#!/usr/bin/env bash
# Prints the path of a Python X.Y that runs: python X.Y on PATH, else one of pyenv's builds
# (pyenv's shim for a version that is not selected fails, so each candidate is run, not trusted).
# Exit 1, saying what to install, when there is none. Used by the Makefile, .ci/run and tools/ci_*.sh.
#   tools/find_python.sh 3.13
set -uo pipefail
want="${1:?usage: tools/find_python.sh X.Y}"
candidates=("$(command -v "python$want" || true)")
home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
for built in "${PYENV_ROOT:-$home/.pyenv}"/versions/"$want".*/bin/"python$want" \
             /usr/local/bin/"python$want" /usr/bin/"python$want"; do
  candidates+=("$built")
done
for candidate in "${candidates[@]}"; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  found="$("$candidate" -c 'import sys, venv; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)"
  if [ "$found" = "$want" ]; then echo "$candidate"; exit 0; fi
done
echo "no Python $want with venv found (on PATH, or in pyenv's versions): install Python $want" \
  "(pyenv install $want, or your system's python$want and python$want-venv packages)," \
  "or name one: PYTHON=/path/to/python$want" >&2
exit 1
