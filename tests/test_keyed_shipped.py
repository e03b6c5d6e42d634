"""The handler to copy as a reader owns it: the files to copy (idem.core.handlers.FILES_TO_COPY),
the one optional file a reader may drop (OPTIONAL_FILE: the shapes and modes the stack never uses),
and the tests that ship beside them (SHIPPED_TESTS), run in an empty folder holding only those
files, with nothing of idem importable and no pytest plugin of this repository, then `mypy --strict`
there. tests/test_handler_standalone.py runs the copy against the loopback Stripe and `idem check`."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from idem.core.handlers import FILES_TO_COPY, OPTIONAL_FILE, SHIPPED_TESTS

HANDLERS = Path(__file__).resolve().parent.parent / "idem" / "core" / "handlers"
#: The issue's bound for the files to copy together (issue 39, "A handler one can own").
LINE_BOUND = 1_200
#: Where they stand today (wc -l): a ratchet, lowered as lines are cut. Raised once, from 1,605, for
#: two bounds on time found false (botocore's count of attempts; its wait for x-amz-retry-after).
LINES_TODAY = 1_618
#: What the shipped tests may import besides the standard library and the copied files.
SHIPPED_TEST_NEEDS = {"pytest", "boto3", "moto", "stripe"}
#: Run pytest as a reader would in the copied folder: the interpreter isolated (no PYTHONPATH, no
#: user site), `idem` made unimportable, and no plugin loaded but pytest's own.
RUN_PYTEST = ("import sys; sys.modules['idem'] = None; import pytest; "
              "raise SystemExit(pytest.main(['-q', '-p', 'no:cacheprovider', *sys.argv[1:]]))")


def lines_of(names: tuple[str, ...]) -> int:
    return sum(len((HANDLERS / name).read_text().splitlines()) for name in names)


def copy_into(folder: Path, optional: bool, tests: bool = True) -> Path:
    for name in FILES_TO_COPY + ((OPTIONAL_FILE,) if optional else ()) + ((SHIPPED_TESTS,) if tests else ()):
        shutil.copy(HANDLERS / name, folder / name)
    return folder


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith(("AWS_", "STRIPE_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run([sys.executable, "-I", "-c", RUN_PYTEST, *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)


def test_every_keyed_file_is_listed_once_as_to_copy_or_optional():
    on_disk = {p.name for p in HANDLERS.glob("keyed*.py")}
    assert on_disk == set(FILES_TO_COPY) | {OPTIONAL_FILE} and OPTIONAL_FILE not in FILES_TO_COPY
    assert (HANDLERS / SHIPPED_TESTS).exists()


def test_pins_gap_the_files_to_copy_are_still_over_1200_lines_together():
    """Issue 39 asks under 1,200 lines for the files to copy together; they are not there yet (the
    optional file, SNS, EventBridge and the modes that read no order file, is out of the count). This
    pins where they stand so that they only shrink: lower LINES_TODAY as lines go, and turn this into
    `< LINE_BOUND` once there."""
    total = lines_of(FILES_TO_COPY)
    assert total <= LINES_TODAY, f"the files to copy grew to {total} lines (ratchet: {LINES_TODAY})"
    assert total >= LINE_BOUND, f"{total} lines: under the bound now; make this test assert it"


def test_the_parsing_of_sns_and_eventbridge_lives_only_in_the_optional_file():
    required = "".join((HANDLERS / name).read_text() for name in FILES_TO_COPY)
    optional = (HANDLERS / OPTIONAL_FILE).read_text()
    for shape in ('"detail.object.key"', '"detail.bucket.name"', 'get("Type") == "Notification" and "Message" in'):
        assert shape in optional and shape not in required, shape


def test_the_shipped_tests_import_only_pytest_boto3_moto_stripe_and_the_copied_files():
    siblings = {Path(n).stem for n in FILES_TO_COPY + (OPTIONAL_FILE,)}
    allowed = set(sys.stdlib_module_names) | SHIPPED_TEST_NEEDS | siblings
    for node in ast.walk(ast.parse((HANDLERS / SHIPPED_TESTS).read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        assert all(n.split(".")[0] in allowed for n in names), names


def test_the_shipped_tests_pass_in_an_empty_folder_without_the_optional_file(tmp_path):
    """The production event shapes need nothing but the files to copy: the handler charges, parks
    and answers as its tests say with OPTIONAL_FILE dropped (and then refuses SNS, saying why)."""
    folder = copy_into(tmp_path, optional=False)
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES_TO_COPY + (SHIPPED_TESTS,))
    run = run_pytest(folder)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "failed" not in run.stdout and "skipped" not in run.stdout


def test_with_the_optional_file_the_copy_reads_sns_too(tmp_path):
    run = run_pytest(copy_into(tmp_path, optional=True), "-k", "sns or sqs")
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


def test_a_broken_copy_fails_its_shipped_tests(tmp_path):
    """The shipped tests bite: a copy that sends this upload's reference and metadata instead of
    the first claim's (the charge parameters under one key differ) fails them."""
    folder = copy_into(tmp_path, optional=False)
    source = (folder / "keyed.py").read_text()
    kept = "sent_as(ref, claimed.metadata)"
    assert source.count(kept) == 1
    (folder / "keyed.py").write_text(source.replace(kept, "sent_as(ref, None)"))
    run = run_pytest(folder, "-k", "another_name")
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


@pytest.mark.parametrize("optional", [False, True], ids=["without the optional file", "with it"])
def test_mypy_strict_passes_on_the_copied_folder_with_its_tests(tmp_path, optional):
    folder = copy_into(tmp_path, optional=optional)
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "."], cwd=folder,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert f"no issues found in {len(list(folder.glob('*.py')))} source files" in run.stdout
