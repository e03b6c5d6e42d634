"""idem.sim.fastload: what it makes cheaper stays the same."""
from __future__ import annotations

import gc

import pytest
from moto.core.base_backend import BaseBackend
from moto.dynamodb.models import dynamodb_backends
from moto.s3.models import s3_backends

from idem.sim import fastload
from idem.sim.world import ACCOUNT, REGION, LocalWorld, ensure_moto


def test_the_url_table_is_built_once_per_service_and_is_moto_s_own():
    ensure_moto()
    s3 = s3_backends[ACCOUNT]["aws"]
    dynamodb = dynamodb_backends[ACCOUNT][REGION]
    assert BaseBackend.urls.fget.__name__ == "cached_urls"
    first = s3.urls
    assert s3.urls is first  # kept, not rebuilt
    built = fastload.built_by_moto(s3)  # moto's own builder, run now
    assert built == first and built is not first
    assert dynamodb.urls is not first and set(dynamodb.urls) != set(first)  # one table per service


def test_the_url_table_follows_the_settings_it_depends_on(monkeypatch: pytest.MonkeyPatch):
    ensure_moto()
    s3 = s3_backends[ACCOUNT]["aws"]
    before = s3.urls
    monkeypatch.setenv("MOTO_S3_CUSTOM_ENDPOINTS", "https://storage.example.test")
    custom = s3.urls
    assert custom is not before
    assert any("storage.example.test" in url for url in custom)
    assert not any("storage.example.test" in url for url in before)
    monkeypatch.delenv("MOTO_S3_CUSTOM_ENDPOINTS")
    assert s3.urls is before


def test_installing_twice_keeps_one_cache():
    ensure_moto()
    installed = BaseBackend.urls
    fastload.cache_moto_url_tables()
    assert BaseBackend.urls is installed


def test_requests_still_reach_moto_through_the_kept_tables():
    with LocalWorld(prefix="fastload") as world:
        world.s3.put_object(Bucket=world.bucket, Key="a b ü.json", Body=b"{}")
        assert world.s3.get_object(Bucket=world.bucket, Key="a b ü.json")["Body"].read() == b"{}"
        world.dynamodb.put_item(TableName=world.ledger_table, Item={"pk": {"S": "x"}})
        assert world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "x"}})["Item"]
        world.sqs.send_message(QueueUrl=world.queue_url, MessageBody="m")
        assert world.sqs.receive_message(QueueUrl=world.queue_url)["Messages"][0]["Body"] == "m"


def test_fewer_collections_puts_the_thresholds_back_even_on_an_error():
    saved = gc.get_threshold()
    with pytest.raises(RuntimeError):
        with fastload.fewer_collections():
            assert gc.get_threshold() == fastload.BATCH_GC_THRESHOLDS
            raise RuntimeError("a batch that fails")
    assert gc.get_threshold() == saved


def test_each_response_class_s_actions_are_listed_once_and_as_moto_lists_them():
    ensure_moto()
    from moto.core import responses, utils
    from moto.dynamodb.responses import DynamoHandler

    listed = responses.method_names_from_class
    assert listed.cached_by_idem
    first = listed(DynamoHandler)
    assert first == utils.method_names_from_class(DynamoHandler) == listed.moto_own(DynamoHandler)
    assert "put_item" in first and "update_item" in first
    assert listed(DynamoHandler) is first  # kept, not asked again
    fastload.cache_moto_method_names()
    assert responses.method_names_from_class is listed  # installed once


# conditions as handlers write them: functions, placeholders, nested paths, every comparator
CONDITIONS = [
    "attribute_not_exists(pk)",
    "attribute_not_exists(pk) OR (#s = :claimed AND lease_until < :now)",
    "#o = :me AND #s = :in_progress",
    "begins_with(#k, :p) AND size(items) >= :n AND a.b[0] <> :x",
    "NOT (#s IN (:a, :b)) AND c BETWEEN :lo AND :hi",
]


def _tokens(nodes):
    return [(n.nonterminal, n.kind, n.text, n.value, n.children) for n in nodes]


@pytest.mark.parametrize("expression", CONDITIONS)
def test_a_condition_s_tokens_are_moto_s_own_and_fresh_for_every_write(expression):
    ensure_moto()
    from moto.dynamodb.comparisons import ConditionExpressionParser

    lexed = ConditionExpressionParser._lex_condition_expression
    assert lexed.cached_by_idem
    parser = ConditionExpressionParser(expression, {}, {})
    first = lexed(parser)
    assert _tokens(first) == _tokens(lexed.moto_own(parser))  # moto's lexer, run now
    first[0].children.append("changed by a parser")  # moto's parser fills children in
    again = lexed(parser)
    assert again[0] is not first[0] and again[0].children == []


def test_a_condition_moto_cannot_read_is_refused_every_time():
    ensure_moto()
    from moto.dynamodb.comparisons import ConditionExpressionParser

    for _ in range(2):
        with pytest.raises(ValueError, match="Cannot parse condition"):
            ConditionExpressionParser("a = :b ; drop", {}, {})._lex_condition_expression()


def test_conditional_writes_still_hold_and_refuse_through_the_kept_tokens():
    with LocalWorld(prefix="fastlex") as world:
        put = dict(TableName=world.ledger_table, Item={"pk": {"S": "k"}, "status": {"S": "claimed"}},
                   ConditionExpression="attribute_not_exists(pk)")
        world.dynamodb.put_item(**put)
        for _ in range(2):  # the second time from the kept tokens
            with pytest.raises(world.dynamodb.exceptions.ConditionalCheckFailedException):
                world.dynamodb.put_item(**put)
        world.dynamodb.update_item(TableName=world.ledger_table, Key={"pk": {"S": "k"}},
                                   UpdateExpression="SET #s = :done", ConditionExpression="#s = :claimed",
                                   ExpressionAttributeNames={"#s": "status"},
                                   ExpressionAttributeValues={":done": {"S": "done"}, ":claimed": {"S": "claimed"}})
        item = world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "k"}})["Item"]
        assert item["status"] == {"S": "done"}


def test_a_check_world_s_queue_message_is_the_one_send_message_makes():
    with LocalWorld(prefix="fastq", provider_in_memory=True) as world:
        world.send_to_queue(world.queue_url, '{"a": "b ü"}')  # straight into moto's backend
        world.sqs.send_message(QueueUrl=world.queue_url, MessageBody='{"a": "b ü"}')
        got = world.sqs.receive_message(QueueUrl=world.queue_url, MaxNumberOfMessages=10,
                                        AttributeNames=["All"], MessageAttributeNames=["All"])["Messages"]
        assert len(got) == 2
        direct, sent = got
        for kept in (direct, sent):
            kept.pop("MessageId"), kept.pop("ReceiptHandle")
            kept["Attributes"].pop("SentTimestamp"), kept["Attributes"].pop("ApproximateFirstReceiveTimestamp")
        assert direct == sent


def test_a_handler_s_traceback_is_python_s_without_the_runtime_s_frames():
    import traceback

    from idem.sim.runtime import handler_traceback

    def charge() -> None:
        raise ValueError("card declined: ü")

    try:
        charge()
    except ValueError as error:
        shown = handler_traceback(error)
        python_s = traceback.format_exception(error)
    assert shown.startswith("Traceback (most recent call last):\n")
    assert shown.endswith("ValueError: card declined: ü\n") and python_s[-1] == "ValueError: card declined: ü\n"
    assert 'in charge\n    raise ValueError("card declined: ü")\n' in shown  # the line, as Python shows it
    assert "^" not in shown  # no column carets
    assert "idem/sim/" not in shown  # only the handler's frames (here, this test's)


@pytest.mark.parametrize("text", ["Wed, 02 Dec 2026 08:53:08 GMT", "2026-12-02T08:53:08.123Z",
                                  "2026-12-02T08:53:08+01:00", 1796201588, "1796201588"])
def test_a_timestamp_reads_as_botocore_reads_it(text):
    ensure_moto()
    from botocore import parsers

    parse = parsers.DEFAULT_TIMESTAMP_PARSER
    assert parse.cached_by_idem
    assert parse(text) == parse.botocore_own(text)
    assert parse(text).utcoffset() == parse.botocore_own(text).utcoffset()
    assert parse(text) == parse.botocore_own(text)  # the second time, from the kept ones


def test_a_timestamp_read_in_the_local_zone_is_read_again_under_another_tz(monkeypatch: pytest.MonkeyPatch):
    ensure_moto()
    import time

    from botocore import parsers

    parse = parsers.DEFAULT_TIMESTAMP_PARSER
    try:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        in_utc = parse("1796201588")  # seconds since the epoch: botocore gives it the local zone
        monkeypatch.setenv("TZ", "Asia/Kolkata")
        time.tzset()
        in_india = parse("1796201588")
        assert in_india.utcoffset() == parse.botocore_own("1796201588").utcoffset() != in_utc.utcoffset()
        assert in_india == in_utc  # the same instant
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_bad_timestamp_is_refused_every_time():
    ensure_moto()
    from botocore import parsers

    for _ in range(2):
        with pytest.raises(ValueError):
            parsers.DEFAULT_TIMESTAMP_PARSER("not a time")


def test_every_answer_moto_serializes_reads_the_same_keys_as_moto_and_its_own_values():
    """cache_moto_alias_keys: the keys where a member's value may be found are moto's own for
    each (class, member, shape), and each answer's values are still its own object's."""
    from moto.core import serialize

    ensure_moto()
    picker = serialize.AttributePicker
    assert picker.get_possible_keys.cached_by_idem
    own = picker.get_possible_keys.moto_own
    with LocalWorld(prefix="alias") as world:
        for n in range(3):  # GetObject's answer: about forty members, each read through the picker
            world.upload(f"acct/{n}.json", f'{{"n": {n}}}'.encode())
            got = world.s3.get_object(Bucket=world.bucket, Key=f"acct/{n}.json")
            assert got["Body"].read() == f'{{"n": {n}}}'.encode() and got["ContentLength"] == 8
        # the same keys moto works out, for an object of its own kind, member and shape
        model = world.s3.meta.service_model.operation_model("GetObject").output_shape
        for name, shape in model.members.items():
            context = serialize.AttributePickerContext(obj={"x": 1}, key=name, shape=shape)
            instance = picker()
            assert tuple(picker.get_possible_keys(instance, context)) == tuple(own(instance, context))
    fastload.cache_moto_alias_keys()  # twice: the same one
    assert picker.get_possible_keys.moto_own is own
