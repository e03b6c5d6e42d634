"""Public S3-triggered functions from aws-samples/serverless-patterns (MIT-0), each checked unchanged
from its own template, with the verdict a correct checker must give (tests/public/README.md has the
sources, licence and the AWS fact behind each verdict). Their files are read from a local mirror of
that repository at a pinned commit; without one the tests skip."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from check_cli import cli

COMMIT = "fb7b5d06c27d8abb1bd35e52ab7523acf4baab7b"
MIRROR = Path(os.environ.get("IDEM_PUBLIC_MIRROR", "/work/.mirror/aws-samples+serverless-patterns/repo"))


def _sample(folder: str, into: Path) -> Path:
    """The sample's text files at COMMIT, written under `into`, byte for byte."""
    if not (MIRROR / "HEAD").is_file() and not (MIRROR / ".git").exists():
        pytest.skip(f"no mirror of aws-samples/serverless-patterns at {MIRROR} (set IDEM_PUBLIC_MIRROR)")
    git = ["git", f"--git-dir={MIRROR if (MIRROR / 'HEAD').is_file() else MIRROR / '.git'}"]
    try:
        names = subprocess.run([*git, "ls-tree", "-r", "--name-only", COMMIT, folder], check=True,
                               capture_output=True, text=True).stdout.split()
    except subprocess.CalledProcessError:
        pytest.skip(f"the mirror at {MIRROR} has no commit {COMMIT}")
    for name in names:
        if name.endswith((".py", ".yaml", ".yml", ".json", ".txt")):
            data = subprocess.run([*git, "show", f"{COMMIT}:{name}"], check=True, capture_output=True).stdout
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            (into / name).write_bytes(data)
    return into / folder / "template.yaml"


def _check(template: Path, function: str, *args: str) -> tuple[int, dict]:
    code, out, err = cli("--template", str(template), "--function", function, "--workers", "1", *args, "--json")
    return code, json.loads(out)


def _verdicts(report: dict) -> dict[str, str]:
    return {r["schedule"]: r["verdict"] for r in report["results"]}


def test_transcribe_breaks_a_swallowed_error_is_lost_and_a_duplicate_starts_a_second_job(tmp_path):
    code, report = _check(_sample("s3-lambda-transcribe-sam", tmp_path), "SpeechToTextFunction",
                          "--effect", "transcribe:StartTranscriptionJob", "--retries", "0")
    assert code == 1
    verdicts = _verdicts(report)
    assert verdicts["exception before transcribe:StartTranscriptionJob on arrival 1; single; 0 retries"] == "silent_loss"
    assert verdicts["no fault; duplicate; 0 retries"] == "double_effect"
    assert report["deployed"]["timeout"] == 60 and report["deployed"]["memory_mb"] == 256  # its Globals


def test_ses_needs_its_parameters_then_breaks_an_email_per_delivery(tmp_path):
    template = _sample("s3-lambda-ses-sam", tmp_path)
    code, report = _check(template, "SendEmailLambdaFunction", "--effect", "ses:SendEmail")
    assert code == 2 and report["error"] == (
        "--template template.yaml: parameter SenderEmailId has no default and no value: give it with "
        "--parameter SenderEmailId=VALUE (or --parameters-file FILE)")
    code, report = _check(template, "SendEmailLambdaFunction", "--effect", "ses:SendEmail", "--retries", "0",
                          "--parameter", "SenderEmailId=sender@example.com",
                          "--parameter", "RecipientEmailId=ops@example.com")
    assert code == 1
    verdicts = _verdicts(report)
    assert verdicts["no fault; duplicate; 0 retries"] == "double_effect"
    assert verdicts["exception before email:SendEmail on arrival 1; single; 0 retries"] == "silent_loss"


def _lost_for_want_of_a_failure_destination(code: int, report: dict) -> None:
    """The sample's function has no DeadLetterQueue or OnFailure destination: an event that fails every
    attempt is discarded (docs/check_from_a_template.md P16), and that is its only break."""
    assert code == 1 and report["deployed"]["failure_destination"] == "", report["verdicts"]
    assert set(report["verdicts"]) == {"exactly_once", "silent_loss"}, report["verdicts"]


def test_pins_bug_rekognition_loses_only_failed_events_because_moto_answers_the_same_labels_for_every_image(
        tmp_path):
    """Its trigger is an AWS::Events::Rule outside the function: it gets EventBridge's event. Its only
    breaks here are the failed events its function has nowhere to put; a correct checker would also break
    it on a second upload of the same name whose first invocation writes last (labels of the older
    image), which needs labels that depend on the image read."""
    code, report = _check(_sample("rekognition-s3-detectlabels-python", tmp_path), "RekognitionFunction",
                          "--effect", "s3:PutObject", "--retries", "0")
    assert report["trigger"] == "eventbridge" and report["baseline"]["s3:PutObject"] == 1
    _lost_for_want_of_a_failure_destination(code, report)


def test_resizer_loses_only_failed_events_for_want_of_a_failure_destination_and_leaves_nothing_in_tmp(tmp_path):
    from PIL import Image

    template = _sample("s3-lambda-resizing-python", tmp_path)
    Image.new("RGB", (64, 48), (200, 30, 30)).save(tmp_path / "red.jpeg")
    before = set(os.listdir("/tmp"))
    code, report = _check(template, "ResizerFunction", "--effect", "s3:PutObject", "--retries", "0",
                          "--object", f"{tmp_path / 'red.jpeg'}=photo.jpeg")
    assert report["baseline"]["s3:PutObject"] == 1
    _lost_for_want_of_a_failure_destination(code, report)
    left = {n for n in set(os.listdir("/tmp")) - before if "photo.jpeg" in n or n.startswith("idem-lambda-tmp-")}
    assert not left


def test_mediaconvert_runs_on_stand_in_answers_and_breaks_a_second_job_after_a_lost_answer(tmp_path):
    code, report = _check(_sample("s3-lambda-mediaconvert", tmp_path), "LambdaFunction",
                          "--effect", "mediaconvert:CreateJob", "--retries", "1")
    assert code == 1
    assert set(report["stand_ins"]) == {"mediaconvert:DescribeEndpoints", "mediaconvert:CreateJob"}
    assert _verdicts(report)["exception after mediaconvert:CreateJob on arrival 1; single; 1 retry"] == "double_effect"
