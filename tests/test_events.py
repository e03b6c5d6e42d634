"""S3 events: the AWS shape built from a real put_object, and read back."""
from __future__ import annotations

import pytest

from idem.core.events import (EventError, load_event, newer_sequencer, read_event, s3_event,
                         s3_test_event as make_test_event)


def test_record_has_the_aws_shape_from_a_real_put(world):
    obj = world.upload("alice/my file+1.csv", b"abc")
    record = s3_event(obj)["Records"][0]
    assert record["eventVersion"] == "2.1"
    assert record["eventSource"] == "aws:s3"
    assert record["eventName"] == "ObjectCreated:Put"
    assert record["s3"]["bucket"]["name"] == world.bucket
    assert record["s3"]["bucket"]["arn"] == f"arn:aws:s3:::{world.bucket}"
    s3_object = record["s3"]["object"]
    assert s3_object["key"] == "alice/my+file%2B1.csv"  # URL-encoded, spaces as +
    assert s3_object["size"] == 3
    head = world.s3.head_object(Bucket=world.bucket, Key="alice/my file+1.csv")
    assert s3_object["eTag"] == head["ETag"].strip('"')
    assert s3_object["versionId"] == head["VersionId"]
    assert len(s3_object["sequencer"]) == 18 and int(s3_object["sequencer"], 16) > 0


def test_unversioned_bucket_sends_no_version_id():
    from idem.local.world import LocalWorld

    with LocalWorld(versioned=False, prefix="plain") as plain:
        record = s3_event(plain.upload("a.csv"))["Records"][0]
    assert "versionId" not in record["s3"]["object"]


def test_read_back_decodes_the_key(world):
    obj = world.upload("alice/my file+1.csv")
    batch = read_event(s3_event(obj))
    assert batch.objects == [obj]
    assert batch.objects[0].key == "alice/my file+1.csv"


def test_sequencers_grow_per_upload(world):
    first, second = world.upload("k"), world.upload("k")
    assert newer_sequencer(second.sequencer, first.sequencer)
    assert not newer_sequencer(first.sequencer, second.sequencer)


def test_sequencers_are_compared_after_right_padding():
    # As plain strings "0A" > "09FF" would hold by length luck; padded, 0A00 > 09FF.
    assert newer_sequencer("0A", "09FF")
    assert not newer_sequencer("09FF", "0A")
    assert not newer_sequencer("0A", "0A00")  # equal once padded


def test_test_event_is_recognised_not_processed():
    batch = read_event(make_test_event("bucket"))
    assert batch.test_event and batch.objects == [] and batch.skipped == []


@pytest.mark.parametrize("event, says", [
    ({"detail": {}}, "no 'Records' list"),
    ({"Records": "x"}, "must be a list"),
    ([1, 2], "expected a JSON object"),
])
def test_non_s3_events_get_a_clear_error(event, says):
    with pytest.raises(EventError, match=says):
        read_event(event)


def test_every_record_of_a_multi_record_event_is_read(world):
    a, b = world.upload("a/1"), world.upload("b/2")
    event = s3_event(a, b)
    event["Records"].insert(1, {"eventSource": "aws:s3", "eventVersion": "2.1",
                                "eventName": "ObjectCreated:Put"})
    event["Records"].append({**event["Records"][0], "eventName": "ObjectRemoved:Delete"})
    batch = read_event(event)
    assert batch.objects == [a, b]
    assert [(s.index, s.malformed) for s in batch.skipped] == [(1, True), (3, False)]


def test_newer_event_versions_are_read_and_other_majors_refused(world):
    record = s3_event(world.upload("k"))["Records"][0]
    assert read_event({"Records": [{**record, "eventVersion": "2.3"}]}).objects
    batch = read_event({"Records": [{**record, "eventVersion": "3.0"}]})
    assert batch.skipped[0].malformed and "3.0" in batch.skipped[0].reason


def test_eventbridge_object_created_is_understood():
    event = {"source": "aws.s3", "detail-type": "Object Created", "time": "t", "region": "eu-west-1",
             "detail": {"bucket": {"name": "b"}, "object": {"key": "my file.csv", "size": 4,
                        "etag": "e", "sequencer": "01", "version-id": "v1"}, "reason": "PutObject"}}
    (obj,) = read_event(event).objects
    assert (obj.bucket, obj.key, obj.version_id, obj.region) == ("b", "my file.csv", "v1", "eu-west-1")


@pytest.mark.parametrize("text, says", [("", "empty"), ("{nope", "not valid JSON")])
def test_load_event_explains_bad_text(text, says):
    with pytest.raises(EventError, match=says):
        load_event(text)
