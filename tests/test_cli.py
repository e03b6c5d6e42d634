"""`python -m idem`: sim, limits, replay and race, including bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from idem.cli import main
from idem.core.events import s3_event, s3_test_event
from idem.local.scenarios import OUTCOME_FIELDS


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sim_prints_the_headline_table(capsys):
    code, out, _ = run_cli(capsys, "sim")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["fault,", "times", "naive", "claim_first", "robust", "keyed"]
    assert "after_charge, once" in out and "2 double_charge" in out and "1 silent_mismatch" in out
    assert len(lines) == 2 + 8


def test_sim_all_json_gives_every_scenario_with_the_outcome_fields(capsys):
    code, out, _ = run_cli(capsys, "sim", "--all", "--json", "--handler", "keyed")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 21
    assert all(list(r) == list(OUTCOME_FIELDS) for r in rows)
    assert {r["verdict"] for r in rows} <= {"exactly_once", "needs_attention", "failed_visibly"}


def test_sim_filters(capsys):
    code, out, _ = run_cli(capsys, "sim", "--fault", "after_charge", "--times", "once", "--json")
    rows = json.loads(out)
    assert [(r["handler"], r["charges"]) for r in rows] == [
        ("naive", 2), ("claim_first", 1), ("robust", 2), ("keyed", 1)]


@pytest.mark.parametrize("argv, says", [
    (["sim", "--handler", "nope"], "unknown handler"),
    (["sim", "--fault", "none", "--times", "once"], "no scenario matches"),
])
def test_sim_bad_filters_exit_2_with_one_line(capsys, argv, says):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and says in err and len(err.strip().splitlines()) == 1


def test_limits_shows_robust_twice_and_keyed_once(capsys):
    code, out, _ = run_cli(capsys, "limits", "--json")
    rows = {r["handler"]: r for r in json.loads(out)}
    assert code == 0 and rows["robust"]["charges"] == 2 and rows["keyed"]["charges"] == 1


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_replay_runs_a_captured_event_per_record(capsys, tmp_path, world):
    event = s3_event(world.upload("alice/a.csv"), world.upload("bob/b.csv"))
    code, out, _ = run_cli(capsys, "replay", write(tmp_path, "e.json", event), "--deliveries", "2",
                           "--json")
    rows = json.loads(out)
    assert code == 0 and [(r["charges"], r["record"]) for r in rows] == [(1, "done"), (1, "done")]
    code, out, _ = run_cli(capsys, "replay", write(tmp_path, "e.json", event), "--deliveries", "2",
                           "--handler", "naive", "--json")
    assert [r["charges"] for r in json.loads(out)] == [2, 2]  # naive charges per delivery, on purpose


def test_replay_says_a_test_event_is_nothing_to_do(capsys, tmp_path):
    code, out, err = run_cli(capsys, "replay", write(tmp_path, "t.json", s3_test_event("b")))
    assert code == 0 and "s3:TestEvent" in out and err == ""


@pytest.mark.parametrize("content, says", [
    ("{not json", "not valid JSON"),
    ({"source": "aws.events", "detail": {}}, "not an S3 notification"),
    ({"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1", "eventName": "ObjectCreated:Put",
                   "s3": {"bucket": {"name": "b"}, "object": {}}}]}, "s3.object.key"),
    ("", "empty"),
])
def test_replay_bad_input_exits_2_with_one_clear_line(capsys, tmp_path, content, says):
    code, out, err = run_cli(capsys, "replay", write(tmp_path, "bad.json", content))
    assert code == 2 and out == "" and says in err and len(err.strip().splitlines()) == 1


def test_replay_a_missing_file_exits_2(capsys, tmp_path):
    code, _, err = run_cli(capsys, "replay", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read" in err


def test_replay_reads_standard_input():
    event = {"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1",
                          "eventName": "ObjectCreated:Put",
                          "s3": {"bucket": {"name": "b"}, "object": {"key": "alice/x", "size": 1,
                                                                      "eTag": "e", "sequencer": "01"}}}]}
    done = subprocess.run([sys.executable, "-m", "idem", "replay", "-", "--json"], input=json.dumps(event),
                          capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["charges"] == 1


def test_race_reports_every_round_clean(capsys):
    code, out, _ = run_cli(capsys, "race", "--threads", "8", "--rounds", "20")
    assert code == 0 and "20 of 20 rounds had exactly one winner" in out


def test_race_read_then_write_has_many_winners_on_purpose(capsys):
    code, out, _ = run_cli(capsys, "race", "--threads", "4", "--rounds", "5",
                           "--strategy", "read_then_write", "--json")
    report = json.loads(out)
    assert code == 0 and report["clean_rounds"] == 0 and report["most_winners"] == 4


def test_race_refuses_a_race_of_one(capsys):
    code, _, err = run_cli(capsys, "race", "--threads", "1")
    assert code == 2 and "--threads 2" in err
