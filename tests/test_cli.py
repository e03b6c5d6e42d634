"""`python -m idem`: sim, limits, replay and race, including bad input."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from idem.cli import _parser, main
from idem.core.events import S3Object, s3_event, s3_test_event
from idem.explore.scenarios import OUTCOME_FIELDS

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "tests" / "events"


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
    (["sim", "--handler", "nope"], "unknown --handler 'nope'"),
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
    report = json.loads(out)
    assert code == 0 and report["status"] == "processed"
    assert [(r["account"], r["charges"], r["record"]) for r in report["rows"]] == [
        ("alice", 1, "done"), ("bob", 1, "done")]
    code, out, _ = run_cli(capsys, "replay", write(tmp_path, "e.json", event), "--deliveries", "2",
                           "--handler", "naive", "--json")
    assert [r["charges"] for r in json.loads(out)["rows"]] == [2, 2]  # naive charges per delivery


def test_replay_says_a_test_event_is_nothing_to_do(capsys, tmp_path):
    code, out, err = run_cli(capsys, "replay", write(tmp_path, "t.json", s3_test_event("b")))
    assert code == 0 and "ignored" in out and "s3:TestEvent" in out and err == ""


def test_replay_knows_every_handler_sim_knows(capsys):
    from idem.explore.replay import handler_names

    assert handler_names() == handler_names_of_sim()
    code, out, _ = run_cli(capsys, "replay", str(EVENTS / "put_v2_1.json"), "--handler", "powertools",
                           "--deliveries", "2", "--json")
    report = json.loads(out)
    assert code == 0 and [(r["charges"], r["record"]) for r in report["rows"]] == [(1, "done")]


def handler_names_of_sim():
    from idem.explore.scenarios import handler_names

    return handler_names()


@pytest.mark.parametrize("content, says", [
    ("{not json", "not valid JSON"),
    ("", "the event is empty"),
    ("[" * 5000 + "]" * 5000, "JSON nests"),  # RecursionError in json.loads (3.11), or past MAX_NESTING (3.13 decodes it)
])
def test_replay_unreadable_input_exits_2_with_one_clear_line(capsys, tmp_path, content, says):
    code, out, err = run_cli(capsys, "replay", write(tmp_path, "bad.json", content))
    assert code == 2 and out == "" and says in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content, says", [
    ({"source": "aws.events", "detail": {}}, "not an S3 notification"),
    ({"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1", "eventName": "ObjectCreated:Put",
                   "s3": {"bucket": {"name": "b"}, "object": {}}}]}, "s3.object.key"),
])
def test_replay_an_event_the_function_rejects_exits_2_after_replaying_it(capsys, tmp_path, content, says):
    code, out, err = run_cli(capsys, "replay", write(tmp_path, "bad.json", content))
    assert code == 2 and "rejected" in out and "3 invocations, 3 failed; failure queue: 1" in out
    assert says in err and len(err.strip().splitlines()) == 1


def test_replay_a_missing_file_exits_2(capsys, tmp_path):
    code, _, err = run_cli(capsys, "replay", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read it" in err


@pytest.mark.parametrize("content, says", [
    (b"\xff\xfe{}", "not UTF-8 text"),
    (b" " * (6 * 1024 * 1024 + 1), "larger than 6 MB"),
])
def test_replay_refuses_files_lambda_would_never_deliver(capsys, tmp_path, content, says):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, out, err = run_cli(capsys, "replay", str(path), "--json")
    assert code == 2 and says in json.loads(out)["error"] and says in err


def test_replay_reads_standard_input():
    event = {"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1",
                          "eventName": "ObjectCreated:Put",
                          "s3": {"bucket": {"name": "b"}, "object": {"key": "alice/x", "size": 1,
                                                                      "eTag": "e", "sequencer": "01"}}}]}
    done = subprocess.run([sys.executable, "-m", "idem", "replay", "-", "--json"], input=json.dumps(event),
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"][0]["charges"] == 1


# -- one set of rules --------------------------------------------------------------------
def subcommands():
    parser = _parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices


def test_every_option_of_every_subcommand_has_help_text():
    names = set(subcommands())
    assert {"sim", "limits", "replay", "race", "bench", "deploy"} <= names
    for name, sub in subcommands().items():
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_the_help_names_every_valid_choice():
    from idem.explore import scenarios as sc

    helps = {(name, a.dest): a.help for name, sub in subcommands().items() for a in sub._actions}
    for handler in sc.handler_names():
        assert handler in helps[("sim", "handler")] and handler in helps[("replay", "handler")]
    matrix = sc.all_scenarios(["keyed"])
    for field in ("fault", "times", "delivery"):
        for value in {getattr(s, field) for s in matrix}:
            assert value in helps[("sim", field)], (field, value)


@pytest.mark.parametrize("argv, valid", [
    (["sim", "--handler", "nope"], ["naive", "claim_first", "robust", "keyed"]),
    (["sim", "--fault", "nope"], ["none", "at_charge", "after_charge", "after_commit"]),
    (["sim", "--times", "nope"], ["once", "always", "-"]),
    (["sim", "--delivery", "nope"], ["single", "duplicate", "concurrent"]),
    (["replay", "x.json", "--handler", "nope"], ["naive", "claim_first", "robust", "keyed"]),
    (["race", "--strategy", "nope"], ["conditional_put", "read_then_write", "keyed"]),
    (["bench", "--handler", "nope"], ["naive", "keyed"]),
])
def test_an_unknown_choice_lists_the_valid_ones(capsys, argv, valid):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "nope" in err and all(v in err for v in valid)


@pytest.mark.parametrize("argv, low, high", [
    (["race", "--threads", "1"], 2, 64),
    (["race", "--threads", "65"], 2, 64),
    (["race", "--rounds", "0"], 1, 1000),
    (["race", "--rounds", "1001"], 1, 1000),
    (["replay", "x.json", "--deliveries", "0"], 1, 10),
    (["replay", "x.json", "--deliveries", "11"], 1, 10),
    (["bench", "--events", "2001"], 1, 2000),
    (["deploy", "--wait", "0"], 1, 3600),
])
def test_numbers_out_of_range_are_one_clear_line(capsys, argv, low, high):
    code, out, err = run_cli(capsys, *argv)
    option = argv[-2]
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"{option} must be {low} or more and at most {high}; got {argv[-1]}" in err
    helps = {a.option_strings[0]: a.help for a in subcommands()[argv[0]]._actions if a.option_strings}
    assert helps[option].endswith(f"({low} to {high})")  # the range is in the help


def test_a_number_that_is_not_a_number_is_one_clear_line(capsys):
    code, _, err = run_cli(capsys, "bench", "--events", "many")
    assert code == 2 and err == "error: --events takes a number, got 'many'\n"


@pytest.mark.parametrize("argv", [
    ["sim", "--handler", "nope", "--json"],
    ["race", "--threads", "1", "--json"],
    ["replay", "nope.json", "--json"],
    ["limits", "--json", "--bogus"],
])
def test_json_output_stays_json_for_errors(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and set(json.loads(out)) == {"error"} and json.loads(out)["error"] in err


def test_a_bad_command_line_shows_no_traceback():
    done = subprocess.run([sys.executable, "-m", "idem", "race", "--threads", "100000"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.concurrency
def test_race_reports_every_round_clean(capsys):
    code, out, _ = run_cli(capsys, "race", "--threads", "8", "--rounds", "20")
    assert code == 0 and "20 of 20 rounds had exactly one winner" in out


@pytest.mark.concurrency
def test_race_read_then_write_has_many_winners_on_purpose(capsys):
    code, out, _ = run_cli(capsys, "race", "--threads", "4", "--rounds", "5",
                           "--strategy", "read_then_write", "--json")
    report = json.loads(out)
    assert code == 0 and report["clean_rounds"] == 0 and report["most_winners"] == 4


def test_race_refuses_a_race_of_one(capsys):
    code, _, err = run_cli(capsys, "race", "--threads", "1")
    assert code == 2 and "--threads must be 2 or more" in err


def test_sim_runs_the_providers_own_outcomes_by_name(capsys):
    assert main(["sim", "--fault", "provider_500", "--times", "once", "--delivery", "single",
                 "--handler", "keyed", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["fault"], row["charges"], row["verdict"]) == ("provider_500", 1, "needs_attention")


@pytest.mark.parametrize("handler, account", [("keyed", "none (parked)"), ("naive", "unassigned")])
def test_replay_names_the_account_each_handler_makes_pay_for_a_key_with_no_folder(capsys, tmp_path, handler, account):
    """keyed parks a key with no account folder (nothing charged); the naive pattern charges `unassigned`."""
    path = tmp_path / "e.json"
    path.write_text(json.dumps(s3_event(S3Object("b", "order.json", 10, "e", "01"))))
    _, out, _ = run_cli(capsys, "replay", str(path), "--handler", handler, "--json")
    (row,) = json.loads(out)["rows"]
    assert row["account"] == account and row["charges"] == (0 if handler == "keyed" else 1)
