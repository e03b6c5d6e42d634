#!/usr/bin/env bash
# The check's tests at the lowest versions pyproject.toml's floors allow, and at the newest.
# pip has no "lowest" resolution; uv's `--resolution lowest-direct` installs each direct
# dependency (boto3, moto, time-machine, stripe) at its floor (https://docs.astral.sh/uv/concepts/resolution/#resolution-strategy).
# uv itself comes from PyPI into a venv of its own when it is not on PATH.
#   tools/ci_lowest_newest.sh            # both
#   tools/ci_lowest_newest.sh lowest-direct
set -euo pipefail
cd "$(dirname "$0")/.."
# The Makefile's PYTHON_VERSION: the one Python of the suite, Binder and the functions.
PYTHON="${PYTHON:-$(tools/find_python.sh "$(sed -n 's/^PYTHON_VERSION := //p' Makefile)")}"
RESOLUTIONS=("${@:-lowest-direct}")
[ "$#" -gt 0 ] || RESOLUTIONS=(lowest-direct highest)
# The check's own tests, without the Powertools handler (Powertools is the workbook's, not the check's).
TESTS=(tests/test_check_sandbox.py tests/test_check_handlers.py tests/test_check_lambda_env.py tests/test_check_inputs.py)
work="$(mktemp -d /tmp/idem-lowest-newest.XXXXXX)"
trap 'rm -rf "$work"' EXIT

UV="$(command -v uv || true)"
if [ -z "$UV" ]; then
  "$PYTHON" -m venv "$work/uv"
  "$work/uv/bin/python" -m pip install --quiet --disable-pip-version-check uv
  UV="$work/uv/bin/uv"
fi

for resolution in "${RESOLUTIONS[@]}"; do
  venv="$work/$resolution"
  "$UV" venv --quiet --python "$PYTHON" "$venv"
  "$UV" pip install --quiet --python "$venv/bin/python" --resolution "$resolution" -e '.[check]' 'pytest>=9.2' 'pytest-xdist>=3.8' 'jsonschema>=4.23'  # the test tools at CI's own floors
  echo "== $resolution: $("$venv/bin/python" -c 'from importlib.metadata import version as v; print(", ".join(f"{n} {v(n)}" for n in ("boto3", "moto", "time-machine", "stripe")))')"
  # Two workers, a file each (as `make test`): 6 minutes on 2 cores instead of 10.
  env -u PYTHONPATH "$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile -k "not powertools" "${TESTS[@]}"
done
