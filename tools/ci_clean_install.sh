#!/usr/bin/env bash
# One clean install, as a team's CI does it: build the wheel, install '<wheel>[check]' into a fresh
# venv under /tmp (no repository on sys.path), copy the handler to copy (keyed.py and its keyed_*.py siblings)
# into an empty folder, run `idem check keyed.py:lambda_handler --json` there, and validate the
# JSON against the schema shipped in the wheel. Then the handler's own tests as a reader runs them:
# the files to copy and test_keyed.py alone in an empty folder (the optional keyed_event_shapes.py
# left out), in another fresh venv with pytest, boto3, moto and stripe only (no idem), then
# `mypy --strict` on that folder. Exit 0 only if the check ran, held, its JSON is valid, and the
# shipped tests and mypy pass. `make test-install` runs it; .ci/run too.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# The Makefile's PYTHON_VERSION: the one Python of the suite, Binder and the functions.
PYTHON="${PYTHON:-$(tools/find_python.sh "$(sed -n 's/^PYTHON_VERSION := //p' Makefile)")}"
work="$(mktemp -d /tmp/idem-clean-install.XXXXXX)"
trap 'rm -rf "$work"' EXIT

"$PYTHON" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$work/dist" .
wheel="$(ls "$work"/dist/charged_twice-*.whl)"
unzip -l "$wheel" | grep 'idem/explore/report/check-report.schema.json' >/dev/null \
  || { echo "the wheel has no idem/explore/report/check-report.schema.json"; exit 1; }

"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel[check]"

mkdir "$work/copy"
cp idem/core/handlers/keyed.py idem/core/handlers/keyed_*.py "$work/copy/"
cd "$work/copy"
set +e
env -u PYTHONPATH "$work/venv/bin/idem" check keyed.py:lambda_handler --retries 0 --json > "$work/report.json"
code=$?
set -e
# The schema as the wheel installed it, read in that same venv; the validator is installed only
# now, after the check ran, so it cannot have helped the check run.
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check jsonschema
env -u PYTHONPATH "$work/venv/bin/python" - "$work/report.json" "$code" <<'PY'
import json, sys
from importlib import resources

import jsonschema

report = json.load(open(sys.argv[1]))
schema = json.loads(resources.files("idem.explore.report").joinpath("check-report.schema.json").read_text())
jsonschema.validate(report, schema)
code = int(sys.argv[2])
assert report["exit_code"] == code, (report["exit_code"], code)
if code != 0:
    sys.exit(f"idem check on the copied handler: exit {code}: {report.get('error') or 'breaks'}")
print(f"clean install: '<wheel>[check]' checked the copied handler: holds in {report['schedules']} schedules; "
      "its JSON matches the schema shipped in the wheel")
PY

# The handler's own tests, in an empty folder, with only what they say they need. The list of files
# is idem/core/handlers/__init__.py's (read as text: nothing of idem is imported for it).
cd "$repo"
mkdir "$work/shipped"
read -r -a shipped < <("$PYTHON" - <<'PY'
import ast
tree = ast.parse(open("idem/core/handlers/__init__.py").read())
names = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}
print(" ".join((*names["FILES_TO_COPY"], names["SHIPPED_TESTS"])))
PY
)
for name in "${shipped[@]}"; do cp "idem/core/handlers/$name" "$work/shipped/"; done
"$PYTHON" -m venv "$work/bare"
"$work/bare/bin/python" -m pip install --quiet --disable-pip-version-check -c requirements/constraints.txt \
  pytest boto3 moto stripe
(cd "$work/shipped" && env -u PYTHONPATH PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 "$work/bare/bin/python" -I -m pytest -q -p no:cacheprovider .)
# mypy only now, after the tests ran without it
"$work/bare/bin/python" -m pip install --quiet --disable-pip-version-check -c requirements/constraints.txt mypy
(cd "$work/shipped" && env -u PYTHONPATH "$work/bare/bin/python" -m mypy --strict --no-incremental .)
echo "clean install: the handler's ${#shipped[@]} files (its tests among them) passed pytest and mypy --strict in an empty folder, with pytest, boto3, moto and stripe only"
