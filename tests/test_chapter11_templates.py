"""Chapter 11's section on handlers that charge nobody: the job starter it checks from its SAM
template (notebooks/examples/job_starter/, a copy of tests/samples/uuid_job_starter/) breaks with a
second job, the fix the chapter writes holds, and the write the fix repeats is judged by the state
it leaves, as the chapter says. Each check runs through the CLI with the chapter's options."""
from __future__ import annotations

import filecmp
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "notebooks" / "source" / "11_check_your_own_handler.py"
EXAMPLE = ROOT / "notebooks" / "examples" / "job_starter"
SAMPLE = ROOT / "tests" / "samples" / "uuid_job_starter"
#: The chapter's options (its `idem_check` helper): one retry setting, one worker.
CHAPTER_OPTIONS = ("--function", "StartJobFunction", "--effect", "dynamodb:PutItem", "--retries", "1",
                   "--workers", "1", "--json")
SILENT = {"silent_loss", "silent_mismatch"}
PUT = '''        dynamodb.put_item(
            TableName=JOBS_TABLE,
            Item={
                "job_id": {"S": job_id},
                "client_token": {"S": str(uuid.uuid4())},
                "status": {"S": "SUBMITTED"},
                "document": {"S": f"s3://{bucket}/{key}"},
                "submitted_at": {"S": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            },
        )
'''


def written(name: str) -> str:
    """The file a `%%writefile scratch/<name>` cell of the chapter writes."""
    cell = SOURCE.read_text().split(f"# %%writefile scratch/{name}\n", 1)[1]
    return cell.split("\n# %%", 1)[0].rstrip() + "\n"


def conditional(handler: str) -> str:
    """The chapter's fix with the put made conditional, as its last paragraph advises."""
    assert handler.count(PUT) == 1, "the chapter's fix no longer contains the put this test rewrites"
    body = PUT.replace("        )\n", '            ConditionExpression="attribute_not_exists(job_id)",\n        )\n')
    guarded = "        try:\n" + "".join("    " + line if line.strip() else line for line in body.splitlines(True)) \
        + "        except dynamodb.exceptions.ConditionalCheckFailedException:\n" \
        + "            pass  # started before: leave the job as it is\n"
    return handler.replace(PUT, guarded)


def check(folder: Path) -> tuple[int, dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "idem", "check", "--template", str(folder / "template.yaml"),
                           *CHAPTER_OPTIONS], capture_output=True, text=True, env=env, timeout=300)
    data = json.loads(done.stdout)
    assert done.returncode == data["exit_code"], done.stderr[-2000:]
    return done.returncode, data


@functools.cache
def checked(variant: str, tmp: str) -> tuple[int, dict]:
    folder = Path(tmp) / variant
    shutil.copytree(EXAMPLE, folder)
    if variant == "keyed":
        (folder / "src" / "app.py").write_text(written("job_keyed/src/app.py"))
    elif variant == "conditional":
        (folder / "src" / "app.py").write_text(conditional(written("job_keyed/src/app.py")))
    return check(folder)


def test_the_example_is_the_samples_copy():
    """The chapter shows the code that tests/test_samples.py judges."""
    left, right = EXAMPLE, SAMPLE
    for path in sorted(p.relative_to(right) for p in right.rglob("*") if p.is_file()):
        assert filecmp.cmp(left / path, right / path, shallow=False), path
    assert sorted(p.relative_to(left) for p in left.rglob("*") if p.is_file()) == \
        sorted(p.relative_to(right) for p in right.rglob("*") if p.is_file())


def test_the_job_starter_starts_a_second_job_and_loses_none(tmp_path_factory):
    code, data = checked("given", str(tmp_path_factory.getbasetemp()))
    assert code == 1 and data["baseline"] == {"dynamodb:PutItem": 1, "provider:charge": 0}, data["verdicts"]
    assert data["verdicts"]["double_effect"] > 0 and not SILENT & set(data["verdicts"]), data["verdicts"]
    smallest = data["smallest_break"]
    # botocore resends a put whose answer is lost, the same request and job id (one item), so the
    # smallest break is the handler's own answer lost: Lambda's retry makes a second job id
    assert smallest["schedule"] == "exception after the handler returned on arrival 1; single; 1 retry"
    assert any("left 2 items where the clean run left 1" in f for f in smallest["findings"]), smallest


def test_the_fix_the_chapter_writes_changes_the_job_id_only():
    given, keyed = (EXAMPLE / "src" / "app.py").read_text(), written("job_keyed/src/app.py")
    assert "uuid.uuid1()" in given and "uuid.uuid1()" not in keyed
    assert PUT in given and PUT in keyed  # the same put: the item differs by its key only


def test_the_fix_holds_and_its_repeated_put_is_the_same_state(tmp_path_factory):
    """The schedule that broke the job starter puts twice in the fix too (the answer is lost, the
    retry puts again); the state it leaves is the clean run's, so it is exactly_once."""
    tmp = str(tmp_path_factory.getbasetemp())
    _, given = checked("given", tmp)
    code, keyed = checked("keyed", tmp)
    assert code == 0 and keyed["holds"], keyed["verdicts"]
    assert keyed["schedules"] == given["schedules"]
    broke = given["smallest_break"]["schedule"]
    same = next(r for r in keyed["results"] if r["schedule"] == broke)
    assert same["verdict"] == "exactly_once" and same["effects"]["dynamodb:PutItem"] == 1, same


def test_the_conditional_put_the_chapter_advises_holds_too(tmp_path_factory):
    text = conditional(written("job_keyed/src/app.py"))
    assert 'ConditionExpression="attribute_not_exists(job_id)"' in text
    compile(text, "conditional.py", "exec")
    code, data = checked("conditional", str(tmp_path_factory.getbasetemp()))
    assert code == 0 and data["holds"], data["verdicts"]


def test_the_chapter_states_the_advice_this_file_checks():
    text = " ".join(line.lstrip("# ").strip() for line in SOURCE.read_text().splitlines())
    assert 'ConditionExpression="attribute_not_exists(job_id)"' in text
    assert "`ConditionalCheckFailedException`" in text and "idem/explore/judge/state.py" in text


def test_the_public_sample_style_function_breaks_in_the_three_ways_the_chapter_names(tmp_path):
    """notebooks/examples/speech_to_text/ (written the way aws-samples/serverless-patterns'
    s3-lambda-transcribe-sam is written), checked from its template with the chapter's options:
    the key is not URL-decoded (the family names, HeadObject at a name S3 sent encoded), silent
    losses (it catches every exception and returns a 500: to Lambda a success, never retried),
    and double effects (a job name made from the time: a retry or a copy starts a second job)."""
    folder = tmp_path / "speech_to_text"
    shutil.copytree(ROOT / "notebooks" / "examples" / "speech_to_text", folder)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "idem", "check", "--template", str(folder / "template.yaml"),
                           "--function", "SpeechToTextFunction", "--effect", "transcribe:StartTranscriptionJob",
                           "--retries", "1", "--workers", "1", "--json"], capture_output=True, text=True, env=env,
                          timeout=300)
    report = json.loads(done.stdout)
    assert done.returncode == report["exit_code"] == 1, done.stderr[-2000:]
    assert report["baseline"]["transcribe:StartTranscriptionJob"] == 1  # its clean run: a plain name
    assert report["key_not_decoded"].startswith("the key is not URL-decoded")
    assert "the upload named 'order 1.json'" in report["key_not_decoded"]
    assert {"silent_loss", "double_effect"} <= set(report["verdicts"])
    lost = next(r for r in report["results"] if r["schedule"] == "exception before s3:HeadObject on arrival 1; single; 1 retry")
    assert lost["verdict"] == "silent_loss" and lost["failure_queue"] == 0  # the 500 was a success
    copy = next(r for r in report["results"] if r["schedule"].startswith("no fault; a copy ")
                and "1 s later" in r["schedule"] or r["schedule"] == "no fault; duplicate; 1 retry")
    assert copy["verdict"] == "double_effect", copy
