"""S3 events: the AWS shape built from a real put_object, read back, and hostile input."""
from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idem.core.events import (MAX_NESTING, MAX_RECORDS, EventError, S3Object, load_event, nesting_depth,
                              newer_sequencer, read_event, s3_event, s3_record,
                              s3_test_event as make_test_event)
from idem.core.handlers.common import UNASSIGNED_ACCOUNT, account_of


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
    from idem.sim.world import LocalWorld

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


# -- hostile input -------------------------------------------------------------------------

GOOD = S3Object("acme-uploads", "alice/good.csv", 5, "e" * 32, "0A1B", "v1")


def good_record(key: str = "alice/good.csv") -> dict:
    return s3_record(S3Object("acme-uploads", key, 5, "e" * 32, "0A1B", "v1"))


@pytest.mark.parametrize("key, account", [
    ("alice/order.csv", "alice"), ("alice/2026/order.csv", "alice"), ("alice/", "alice"),
    ("order.csv", UNASSIGNED_ACCOUNT), ("/order.csv", UNASSIGNED_ACCOUNT),
    ("//order.csv", UNASSIGNED_ACCOUNT), (" /order.csv", UNASSIGNED_ACCOUNT), (" ", UNASSIGNED_ACCOUNT),
])
def test_who_pays_for_an_upload(key, account):
    assert account_of(key) == account
    assert UNASSIGNED_ACCOUNT == "unassigned"


def sns_record(message: str) -> dict:
    return {"EventSource": "aws:sns", "EventVersion": "1.0", "Sns": {"Type": "Notification",
            "TopicArn": "arn:aws:sns:us-east-1:123456789012:t", "Message": message}}


def sqs_record(body: object) -> dict:
    return {"eventSource": "aws:sqs", "messageId": "m-1", "body": body}


def test_envelopes_unwrap_to_the_same_object_as_a_direct_delivery():
    direct = json.dumps({"Records": [good_record()]})
    notification = json.dumps({"Type": "Notification", "TopicArn": "t", "Message": direct})
    for event in ({"Records": [sns_record(direct)]}, {"Records": [sqs_record(direct)]},
                  {"Records": [sqs_record(notification)]}):
        batch = read_event(event)
        assert batch.objects == [GOOD] and batch.skipped == []


@pytest.mark.parametrize("record, malformed, says", [
    # From SQS a body that is no S3 event fails (malformed), so the redrive policy moves it to the DLQ
    (sqs_record("hello"), True, "SQS message: body is not JSON"),
    (sqs_record(json.dumps({"foo": 2})), True, "SQS message: not an S3 event"),
    (sqs_record(json.dumps({"Records": []})), False, "an S3 event with no records"),
    (sqs_record(json.dumps(make_test_event("b"))), False, "s3:TestEvent ignored"),
    (sqs_record(None), True, "SQS message: body is missing"),
    (sqs_record(["x"]), True, "body must be a string, got a list"),
    (sns_record(json.dumps({"Records": [{"eventSource": "aws:sqs", "body": "{}"}]})), True,
     "SNS message: record 0: eventSource is 'aws:sqs', not 'aws:s3'"),  # no envelope in an envelope
    ({"eventSource": "aws:sns", "Sns": "x"}, True, "Sns must be a JSON object, got a string"),
    ({"eventSource": "aws:kinesis"}, True, "eventSource is 'aws:kinesis'"),
])
def test_an_envelope_without_an_s3_event_is_skipped_with_a_reason(record, malformed, says):
    batch = read_event({"Records": [good_record(), record]})
    assert batch.objects == [GOOD]
    (skipped,) = batch.skipped
    assert skipped.index == 1 and skipped.malformed is malformed and says in skipped.reason


@pytest.mark.parametrize("drop, says", [
    ("detail", "detail must be a JSON object, got null"),
    ("detail-type", "detail-type is missing"),
    ("detail.bucket", "detail.bucket.name is missing"),
    ("detail.object.key", "detail.object.key is missing"),
])
def test_an_eventbridge_event_missing_a_part_is_skipped_as_malformed(drop, says):
    event = {"source": "aws.s3", "detail-type": "Object Created", "detail": {
        "bucket": {"name": "b"}, "object": {"key": "alice/x.csv", "size": 4}}}
    *path, last = drop.split(".")
    node = event
    for part in path:
        node = node[part]
    del node[last]
    batch = read_event(event)
    assert batch.objects == [] and len(batch.malformed) == 1 and says in batch.malformed[0].reason


def test_a_folder_marker_is_not_an_upload_but_a_zero_byte_file_is():
    marker = s3_record(S3Object("b", "alice/reports/", 0, "d41d8cd98f00b204e9800998ecf8427e", "01"))
    empty_file = s3_record(S3Object("b", "alice/empty.csv", 0, "d41d8cd98f00b204e9800998ecf8427e", "02"))
    batch = read_event({"Records": [marker, empty_file]})
    assert [o.key for o in batch.objects] == ["alice/empty.csv"]
    assert not batch.skipped[0].malformed and "folder marker" in batch.skipped[0].reason


def test_sizes_written_as_whole_floats_are_whole_numbers():
    record = good_record()
    record["s3"]["object"]["size"] = 1024.0
    assert read_event({"Records": [record]}).objects[0].size == 1024


@pytest.mark.parametrize("size, says", [
    (True, "got a boolean true"), ("12", "got a string '12'"), (1.5, "got a number 1.5"), ([4], "got a list"),
    (10**40, "is a number of more than 30 digits"), (-1, "is -1; an S3 object holds 0 bytes to 48.8 TiB"),
])
def test_a_size_that_is_no_whole_number_of_bytes_is_named_with_its_type_and_safe_value(size, says):
    record = good_record()
    record["s3"]["object"]["size"] = size
    (skipped,) = read_event({"Records": [record]}).malformed
    assert skipped.reason.startswith("s3.object.size ") and says in skipped.reason


@pytest.mark.parametrize("count, read, over", [(MAX_RECORDS, MAX_RECORDS, False),
                                               (MAX_RECORDS + 1, MAX_RECORDS, True)])
def test_at_most_max_records_are_read(count, read, over):
    event = {"Records": [good_record(f"alice/{n}.csv") for n in range(count)]}
    batch = read_event(event)
    assert len(batch.objects) == read
    assert [s.index for s in batch.malformed] == ([MAX_RECORDS] if over else [])


def test_skipped_records_are_logged_in_bounded_lines_errors_first():
    removed = {**good_record(), "eventName": "ObjectRemoved:Delete"}
    event = {"Records": [removed] * 100 + [{"eventSource": "aws:s3"}]}
    lines = read_event(event).log_lines(limit=20)
    assert len(lines) == 21
    assert ("error", "record 100 skipped: eventVersion is missing, null or empty") in lines
    assert lines[-1] == ("info", "81 more records skipped (0 malformed), not logged one by one")


def test_nesting_is_measured_without_recursion():
    deep: list = []
    for _ in range(20_000):
        deep = [deep]
    assert nesting_depth(deep, MAX_NESTING) == MAX_NESTING + 1
    assert nesting_depth({"Records": [{"s3": {"object": {"key": "k"}}}]}, MAX_NESTING) == 5


@pytest.mark.parametrize("text, says", [
    ("[" * 10_000 + "]" * 10_000, "nests too deeply to decode"),
    ("[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1), f"nests more than {MAX_NESTING} levels"),
    ("1" * 5000, "not readable JSON"),
])
def test_load_event_explains_absurd_text(text, says):
    with pytest.raises(EventError, match=says):
        load_event(text)


# Any JSON value at all, in place of the event or of any one field of a good record.
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=12), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=12)
FIELDS = ("eventSource", "eventVersion", "eventName", "s3", "s3.bucket", "s3.bucket.name",
          "s3.object", "s3.object.key", "s3.object.size", "s3.object.eTag", "s3.object.sequencer",
          "s3.object.versionId", "eventTime", "awsRegion")
CHECKED = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@CHECKED
@given(event=JSON)
def test_no_event_makes_the_reader_raise_anything_but_event_error(event):
    try:
        read_event(event)
    except EventError:
        pass


@CHECKED
@given(path=st.sampled_from(FIELDS), value=JSON, wrap=st.sampled_from(["none", "sns", "sqs"]))
def test_a_broken_field_costs_only_its_own_record(path, value, wrap):
    broken = copy.deepcopy(good_record("bob/other.csv"))
    *head, last = path.split(".")
    node = broken
    for part in head:
        node = node[part]
    node[last] = value
    if wrap != "none":
        text = json.dumps({"Records": [broken]})
        broken = sns_record(text) if wrap == "sns" else sqs_record(text)
    batch = read_event({"Records": [good_record(), broken]})
    assert batch.objects[0] == GOOD  # the good record is always read
    assert len(batch.objects) + len(batch.skipped) == 2
