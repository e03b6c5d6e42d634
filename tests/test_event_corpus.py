"""The events S3 really sends, and some it should not: tests/events/*.json, replayed.

Each file goes through the local runtime (idem.core.entry, delivered twice, with Lambda's
retries) and through `python -m idem replay`. Each must be handled once, ignored with
a log line, or refused with a clear error, and a mixed event must neither lose nor
repeat its good records.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from idem import cli
from idem.core.entry import App
from idem.core.events import EventError, load_event, read_event
from idem.local.boundary import FaultPlan
from idem.local.runtime import LocalLambda
from idem.local.world import LocalWorld

EVENTS = Path(__file__).parent / "events"
BUCKET = "acme-uploads"
V = "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"


@dataclass(frozen=True)
class Handled:
    """Every object is charged exactly once, however often the event arrives."""

    objects: tuple[tuple[str, str | None], ...]  # (decoded key, version id)


@dataclass(frozen=True)
class Ignored:
    """Nothing is charged, the invocation succeeds, and a log line says why."""

    log: str


@dataclass(frozen=True)
class Refused:
    """The invocation fails with a clear message; retried, then the failure queue."""

    log: str
    charged: tuple[str, ...] = ()  # the good records of a mixed event: charged once each


LONG_KEY = "alice/" + "ü" * 400 + "x" * 214 + ".csv"
EXPECTED = {
    "s3_test_event.json": Ignored("s3:TestEvent ignored"),
    "put_v2_1.json": Handled((("alice/order-v21.csv", V),)),
    "put_v2_2.json": Handled((("alice/order-v22.csv", V),)),
    "put_v2_3.json": Handled((("alice/order-v23.csv", V),)),
    "key_with_spaces.json": Handled((("alice/my order 2026.csv", V),)),
    "key_with_plus.json": Handled((("alice/c++ & more.csv", V),)),
    "key_with_percent.json": Handled((("alice/100% done %41.csv", V),)),
    "key_unicode.json": Handled((("alice/été/コーヒー €.csv", V),)),
    "key_1024_bytes.json": Handled(((LONG_KEY, V),)),
    "version_null.json": Handled((("alice/suspended.csv", None),)),
    "version_absent.json": Handled((("alice/unversioned.csv", None),)),
    "multipart_etag.json": Handled((("alice/big-upload.csv", V),)),
    "eventbridge_object_created.json": Handled((("alice/from eventbridge.csv", "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e"),)),
    "object_removed.json": Ignored("record 0 skipped: ObjectRemoved:Delete is not an object creation"),
    "record_missing_s3.json": Refused("record 0 skipped: record has no s3.bucket.name / s3.object.key (missing 's3')"),
    "mixed_records.json": Refused("record 1 skipped: record has no s3.bucket.name / s3.object.key (missing 'key')",
                                  charged=(f"s3://{BUCKET}/alice/first.csv?versionId={V}",
                                           f"s3://{BUCKET}/bob/second.csv?versionId={V}")),
}
#: What `python -m idem replay` says: exit code, and a phrase of its output.
CLI_REFUSALS = {
    "empty.json": "the event is empty",
    "object_removed.json": "no ObjectCreated record to replay",
    "record_missing_s3.json": "record 0: record has no s3.bucket.name",
    "mixed_records.json": "record 1: record has no s3.bucket.name",
}


def test_every_file_in_the_corpus_has_an_expectation() -> None:
    files = {p.name for p in EVENTS.glob("*.json")}
    assert files == set(EXPECTED) | {"empty.json"}
    assert len(LONG_KEY.encode("utf-8")) == 1024


def deliver_twice(name: str, handler: str = "keyed") -> tuple[LocalWorld, LocalLambda]:
    event = load_event((EVENTS / name).read_text(encoding="utf-8"))
    world = LocalWorld(prefix="corpus")
    runtime = LocalLambda(world, world.env(handler))
    runtime.send(event)
    runtime.send(event, at=5.0)
    runtime.run()
    return world, runtime


def charges_by_reference(world: LocalWorld) -> dict[str, int]:
    found: dict[str, int] = {}
    for charge in world.provider().charges():
        found[charge.reference] = found.get(charge.reference, 0) + 1
    return found


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_runtime_gives_each_event_the_right_behaviour(name: str) -> None:
    expected = EXPECTED[name]
    world, runtime = deliver_twice(name)
    try:
        logs = "\n".join(line for a in runtime.attempts for line in a.logs)
        charged = charges_by_reference(world)
        if isinstance(expected, Handled):
            assert [a.outcome for a in runtime.attempts] == ["ok", "ok"]
            uris = [f"s3://{BUCKET}/{key}" + (f"?versionId={v}" if v else "") for key, v in expected.objects]
            assert charged == {uri: 1 for uri in uris}
            assert runtime.attempts[1].result["processed"][0]["status"] == "duplicate"
            assert world.failure_queue_depth() == 0
        elif isinstance(expected, Ignored):
            assert [a.outcome for a in runtime.attempts] == ["ok", "ok"]
            assert charged == {} and world.failure_queue_depth() == 0
            assert expected.log in logs
        else:
            # a bad record never heals: 3 attempts per delivery, then the failure queue
            assert [a.outcome for a in runtime.attempts] == ["error"] * 6
            assert "RecordsFailed" in runtime.attempts[0].error
            assert world.failure_queue_depth() == 2
            assert expected.log in logs
            assert charged == {uri: 1 for uri in expected.charged}  # not lost, not repeated
    finally:
        world.close()


def test_naive_repeats_the_good_records_of_a_mixed_event_on_purpose() -> None:
    """Without a record, every retry of the mixed event charges its good records again."""
    world, runtime = deliver_twice("mixed_records.json", handler="naive")
    try:
        assert len(runtime.attempts) == 6
        assert set(charges_by_reference(world).values()) == {6}
    finally:
        world.close()


def test_the_version_null_is_no_version() -> None:
    """S3 writes versionId "null" when versioning is off or suspended: the same as none."""
    batch = read_event(load_event((EVENTS / "version_null.json").read_text(encoding="utf-8")))
    assert batch.objects[0].version_id is None
    assert batch.objects[0].uri == f"s3://{BUCKET}/alice/suspended.csv"


def test_an_empty_body_is_a_clear_error() -> None:
    with pytest.raises(EventError, match="the event is empty"):
        load_event((EVENTS / "empty.json").read_text(encoding="utf-8"))
    with LocalWorld(prefix="corpus") as world:
        app = App.from_environment(world.env("keyed"), session=world.session, clock=world.clock,
                                   log=lambda _: None)
        with pytest.raises(EventError, match="no 'Records' list"):
            app.handle({}, None)


@pytest.mark.parametrize("name", sorted(set(EXPECTED) | {"empty.json"}))
def test_python_m_idem_replay_handles_the_corpus(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["replay", str(EVENTS / name), "--deliveries", "2", "--json"])
    out, err = capsys.readouterr()
    expected = EXPECTED.get(name)
    if name in CLI_REFUSALS:
        assert code == 2 and CLI_REFUSALS[name] in err and err.count("\n") == 1
    elif isinstance(expected, Handled):
        rows = json.loads(out)
        assert code == 0 and [r["charges"] for r in rows] == [1] * len(expected.objects)
        assert {r["record"] for r in rows} == {"done"}
    else:  # the test event
        assert code == 0 and "s3:TestEvent" in out
