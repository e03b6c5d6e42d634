"""idem.explore.run.fastcalls and pool.frozen: what a batch makes cheaper reaches moto and comes back the same."""
from __future__ import annotations

import gc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from botocore.exceptions import ClientError

from idem.explore.run import fastcalls
from idem.explore.run.pool import frozen
from idem.sim.world import LocalWorld, ensure_moto


def _sent(client, call, **params):
    """The headers of the request `call` sends (caught before moto answers it)."""
    seen = {}

    def keep(request, **_):
        seen.update(request.headers)

    client.meta.events.register_first("before-send.*.*", keep)
    try:
        getattr(client, call)(**params)
    finally:
        client.meta.events.unregister("before-send.*.*", keep)
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in seen.items()}


@pytest.mark.parametrize("service, call, params", [
    ("dynamodb", "list_tables", {}),
    ("s3", "list_buckets", {}),
])
def test_inside_a_batch_a_request_carries_the_header_botocore_writes_but_the_signature(service, call, params):
    ensure_moto()
    with LocalWorld(prefix="fastcalls") as world:
        client = getattr(world, service)
        signed = _sent(client, call, **params)
        with fastcalls.fast_calls():
            fast = _sent(client, call, **params)
        again = _sent(client, call, **params)  # undone: signed in full again
    scope = lambda headers: headers["Authorization"].rsplit("Signature=", 1)  # noqa: E731
    assert scope(fast)[0] == scope(signed)[0]  # the same credential scope and signed headers
    assert scope(fast)[1] == fastcalls.UNCHECKED_SIGNATURE != scope(signed)[1]
    assert scope(again)[1] != fastcalls.UNCHECKED_SIGNATURE
    assert set(fast) == set(signed)  # X-Amz-Date, the session token, S3's X-Amz-Content-SHA256
    for name in ("X-Amz-Security-Token", "X-Amz-Content-SHA256"):
        assert fast.get(name) == signed.get(name)


def test_inside_a_batch_a_presigned_url_is_signed_in_full():
    from botocore.config import Config

    ensure_moto()
    with LocalWorld(prefix="fastcalls") as world:
        params = {"Bucket": world.bucket, "Key": "alice/order.json"}
        client = world.session.client("s3", config=Config(signature_version="s3v4"))  # SigV4's query signer
        with fastcalls.fast_calls():
            url = client.generate_presigned_url("get_object", Params=params, ExpiresIn=60)
    signature = url.split("X-Amz-Signature=")[1].split("&")[0]
    assert len(signature) == 64 and signature != fastcalls.UNCHECKED_SIGNATURE


def _put(world, **attributes):
    return world.dynamodb.put_item(TableName=world.ledger_table, Item={"pk": {"S": "big"}, **attributes})


@pytest.mark.parametrize("fast", [False, True])
def test_an_item_is_refused_at_moto_s_own_size_limit_inside_a_batch_and_out(fast):
    ensure_moto()
    with LocalWorld(prefix="fastcalls") as world:
        with fastcalls.fast_calls() if fast else _nothing():
            # moto's limit counts each key and each value: "pk" + "big" + "a" + the text
            limit = fastcalls.ITEM_LIMIT - len("pk") - len("big") - len("a") - len("b") - 1
            _put(world, a={"S": "x" * (limit - 1)}, b={"S": "y"})  # one byte under: kept
            with pytest.raises(ClientError, match="Item size has exceeded the maximum allowed size"):
                _put(world, a={"S": "x" * limit}, b={"S": "yy"})  # one byte over, at its last attribute
            nested = {"M": {"inner": {"L": [{"S": "z" * 1000}, {"N": "12345"}]}}}
            _put(world, n=nested, s={"SS": ["p", "q"]})
            item = world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "big"}})["Item"]
    assert item["n"] == nested and sorted(item["s"]["SS"]) == ["p", "q"]


def test_fast_calls_undo_everything_when_the_last_batch_ends():
    from botocore import auth
    from moto.core.request import Request
    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.models import dynamo_type
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser

    signer, item = auth.SigV4Auth.add_auth, dynamo_type.Item.__init__
    parse, make = ConditionExpressionParser.parse, UpdateExpressionParser.__dict__["make"]
    built = Request.__dict__["from_primitives"]
    from moto.core import parse as moto_parse, responses, serialize
    from moto.moto_api._internal.moto_random import MotoRandom

    from botocore.parsers import BaseRestParser
    from moto.s3.responses import S3Response

    moto_own = (responses.method_names_from_class, responses.camelcase_to_underscores, MotoRandom.get_random_string,
                serialize.JSONSerializer._serialize_type_structure, moto_parse.JSONParser._parse_structure,
                BaseRestParser._parse_non_payload_attrs, S3Response.__dict__["subdomain_based_buckets"])
    with fastcalls.fast_calls():
        with fastcalls.fast_calls():  # nested (a batch inside a batch's process): one install
            assert auth.SigV4Auth.add_auth is not signer and dynamo_type.Item.__init__ is not item
        assert auth.SigV4Auth.add_auth is not signer  # the outer one still runs
    assert auth.SigV4Auth.add_auth is signer and dynamo_type.Item.__init__ is item
    assert ConditionExpressionParser.parse is parse and UpdateExpressionParser.__dict__["make"] is make
    assert Request.__dict__["from_primitives"] is built
    assert (responses.method_names_from_class, responses.camelcase_to_underscores, MotoRandom.get_random_string,
            serialize.JSONSerializer._serialize_type_structure, moto_parse.JSONParser._parse_structure,
            BaseRestParser._parse_non_payload_attrs, S3Response.__dict__["subdomain_based_buckets"]) == moto_own


def test_under_a_moto_release_not_followed_moto_answers_its_own_way(monkeypatch):
    """The item sizing, the URL routes and the expressions kept copy or rely on moto 5.2.5's steps; moto 5.2.0 (CI's floor) lacks one of
    them, so under any other release moto's own Item and process_request run; the header signer still
    changes (botocore's, with its clock where it has one)."""
    from botocore import auth
    from moto.core import botocore_stubber
    from moto.dynamodb.models import dynamo_type

    monkeypatch.setattr(fastcalls, "moto_version", lambda: "5.2.0")
    from moto.dynamodb.comparisons import ConditionExpressionParser

    item, route, signer = (dynamo_type.Item.__init__, botocore_stubber.BotocoreStubber.process_request,
                           auth.SigV4Auth.add_auth)
    from moto.core.request import Request
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser

    parse, make = ConditionExpressionParser.parse, UpdateExpressionParser.__dict__["make"]
    built = Request.__dict__["from_primitives"]
    with fastcalls.fast_calls():
        assert dynamo_type.Item.__init__ is item and botocore_stubber.BotocoreStubber.process_request is route
        assert ConditionExpressionParser.parse is parse and UpdateExpressionParser.__dict__["make"] is make
        assert Request.__dict__["from_primitives"] is built
        assert auth.SigV4Auth.add_auth is not signer
    monkeypatch.delattr(auth, "get_current_datetime")  # older botocore reads the UTC time itself
    assert fastcalls._signing_time(auth).tzinfo is None


def test_frozen_leaves_what_exists_out_of_collection_and_puts_it_back():
    before = gc.get_freeze_count()
    with frozen():
        assert gc.get_freeze_count() > before
    assert gc.get_freeze_count() == 0


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *_):
        return False


def _answers(world):
    """What a few calls answer (their results, or their error codes), without request ids or dates."""
    found = []
    calls = [(world.s3.get_object, {"Bucket": world.bucket, "Key": "alice/order.json"}),
             (world.s3.get_object, {"Bucket": world.bucket, "Key": "alice/missing.json"}),
             (world.s3.head_object, {"Bucket": world.bucket, "Key": "alice/order.json"}),
             (world.s3.list_objects_v2, {"Bucket": world.bucket, "Prefix": "alice/"}),
             (world.dynamodb.put_item, {"TableName": world.ledger_table, "Item": {"pk": {"S": "k"}},
                                        "ConditionExpression": "attribute_not_exists(pk)"}),
             (world.dynamodb.get_item, {"TableName": world.ledger_table, "Key": {"pk": {"S": "k"}}}),
             (world.sqs.get_queue_attributes, {"QueueUrl": world.queue_url, "AttributeNames": ["QueueArn"]})]
    for call, params in calls:
        try:
            answer = call(**params)
        except ClientError as error:
            answer = {"Error": error.response["Error"]["Code"]}
        answer.pop("ResponseMetadata", None)
        if "Body" in answer:
            answer["Body"] = answer["Body"].read()
        found.append(_undated(answer))
    return found


def _undated(answer):
    """An answer without its LastModified times (moto's wall clock: two worlds a second apart differ)."""
    if isinstance(answer, dict):
        return {key: _undated(value) for key, value in answer.items() if key != "LastModified"}
    if isinstance(answer, list):
        return [_undated(value) for value in answer]
    return answer


def test_inside_a_batch_each_url_reaches_the_same_method_of_moto():
    ensure_moto()
    answers = []
    for fast in (False, True, True):  # inside: HeadObject takes the way GetObject found for its URL
        with LocalWorld(prefix="fastcalls") as world:
            world.upload("alice/order.json", b'{"order_id": "1"}')
            with fastcalls.fast_calls() if fast else _nothing():
                answers.append(_answers(world))
    assert answers[0] == answers[1] == answers[2]
    assert answers[0][1] == {"Error": "NoSuchKey"} and answers[0][4] == {}  # moto's errors come back as errors


def _writes(world):
    """What a run of conditional writes answers (results or error messages), the same texts sent again
    with other values, and texts moto refuses (a name never used, an update's syntax error)."""
    table, found = world.ledger_table, []
    fence = "#o = :me AND #s = :held"
    names = {"#o": "owner", "#s": "status"}
    calls = [("put_item", {"Item": {"pk": {"S": "a"}, "owner": {"S": "me"}, "status": {"S": "held"}},
                           "ConditionExpression": "attribute_not_exists(pk)"}),
             ("put_item", {"Item": {"pk": {"S": "a"}}, "ConditionExpression": "attribute_not_exists(pk)"}),
             ("update_item", {"Key": {"pk": {"S": "a"}}, "UpdateExpression": "SET #s = :done REMOVE expires_at",
                              "ConditionExpression": fence, "ExpressionAttributeNames": names,
                              "ExpressionAttributeValues": {":me": {"S": "other"}, ":held": {"S": "held"},
                                                            ":done": {"S": "done"}},
                              "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}),
             ("update_item", {"Key": {"pk": {"S": "a"}}, "UpdateExpression": "SET #s = :done REMOVE expires_at",
                              "ConditionExpression": fence, "ExpressionAttributeNames": names,
                              "ExpressionAttributeValues": {":me": {"S": "me"}, ":held": {"S": "held"},
                                                            ":done": {"S": "done"}}, "ReturnValues": "ALL_NEW"}),
             ("put_item", {"Item": {"pk": {"S": "a"}, "n": {"N": "1"}}, "ConditionExpression": fence,
                           "ExpressionAttributeNames": names,
                           "ExpressionAttributeValues": {":me": {"S": "me"}, ":held": {"S": "done"}}}),
             ("put_item", {"Item": {"pk": {"S": "b"}}, "ConditionExpression": "attribute_not_exists(pk)",
                           "ExpressionAttributeNames": {"#unused": "x"}}),
             ("update_item", {"Key": {"pk": {"S": "a"}}, "UpdateExpression": "SET = :x",
                              "ExpressionAttributeValues": {":x": {"S": "x"}}})]
    for operation, params in calls * 2:  # each text again: the second time from what was kept
        try:
            answer = getattr(world.dynamodb, operation)(TableName=table, **params)
        except ClientError as error:
            answer = {"Error": error.response["Error"], "Item": error.response.get("Item")}
        answer.pop("ResponseMetadata", None)
        found.append(answer)
        world.dynamodb.delete_item(TableName=table, Key={"pk": {"S": "b"}})
    found.append(world.dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}})["Item"])
    return found


def test_inside_a_batch_conditional_writes_answer_as_moto_does():
    ensure_moto()
    answers = []
    for fast in (False, True):
        with LocalWorld(prefix="fastcalls") as world:
            with fastcalls.fast_calls() if fast else _nothing():
                answers.append(_writes(world))
    assert answers[0] == answers[1]
    refused = [a["Error"]["Code"] for a in answers[0] if "Error" in a]
    assert refused == (["ConditionalCheckFailedException"] * 2 + ["ValidationException"] * 2
                       + ["ConditionalCheckFailedException"] * 5 + ["ValidationException"] * 2)
    assert answers[0][2]["Item"]["owner"] == {"S": "me"}  # ALL_OLD: the item the fence refused
    assert answers[0][3]["Attributes"]["status"] == {"S": "done"}  # the right owner's update landed
    assert answers[0][-1] == {"pk": {"S": "a"}, "n": {"N": "1"}}  # and the fence that matched it let the put in


def _environ(request):
    """A request's environ as a list (its order kept), the body read out of its stream."""
    shown = {"wsgi.input": lambda stream: stream.getvalue(), "werkzeug.request": repr}  # (itself: by what it says)
    return [(key, shown.get(key, lambda value: value)(value)) for key, value in request.environ.items()]


def test_inside_a_batch_moto_reads_each_request_as_werkzeug_s_builder_writes_it(monkeypatch):
    """Every request a few calls send (S3 keys that need quoting, metadata with underscores, a query
    string, an empty body, DynamoDB's and SQS's JSON) becomes the same werkzeug environ, in the same
    order, and moto answers them the same way."""
    from moto.core import request as moto_request

    ensure_moto()
    own = moto_request.Request.__dict__["from_primitives"].__func__
    sent = []

    def spy(cls, method, url, headers, body=None):
        sent.append((method, url, list(headers.items()), body))
        return own(cls, method, url, headers, body)

    monkeypatch.setattr(moto_request.Request, "from_primitives", classmethod(spy))
    answers = []
    for fast in (False, True):
        with LocalWorld(prefix="fastcalls") as world:
            world.upload("alice/order.json", b'{"order_id": "1"}')
            with fastcalls.fast_calls() if fast else _nothing():
                world.s3.put_object(Bucket=world.bucket, Key="bob/a b+c%d/é?.json", Body=b"{}",
                                    Metadata={"my_key": "v", "other-key": "w"})
                world.s3.put_object(Bucket=world.bucket, Key="bob/empty.json", Body=b"")
                world.s3.list_objects_v2(Bucket=world.bucket, Prefix="bob/", MaxKeys=5)
                world.s3.head_object(Bucket=world.bucket, Key="bob/a b+c%d/é?.json")
                world.sqs.send_message(QueueUrl=world.queue_url, MessageBody="hello")
                answers.append(_answers(world))
                if fast:
                    assert moto_request.Request.__dict__["from_primitives"].__func__ is not spy
    assert answers[0] == answers[1]
    assert len(sent) > 20
    plain = fastcalls._requests_built_plainly()  # (over the spy, which it undoes to)
    try:
        for method, url, headers, body in list(sent):  # (the spy adds what falls back to it)
            from botocore.awsrequest import HeadersDict

            given = HeadersDict(headers)
            assert _environ(moto_request.Request.from_primitives(method, url, given, body)) == \
                _environ(own(moto_request.Request, method, url, given, body))
    finally:
        plain()
    assert any("x-amz-meta-my_key" in dict(h) for _, _, h, _ in sent)  # a name moto keeps as sent
    assert any(body in (b"", None) for _, _, _, body in sent) and any("%" in url for _, url, _, _ in sent)


@pytest.mark.parametrize("length, digits, lower", [(52, True, False), (20, True, True), (7, False, False), (0, True, False)])
def test_inside_a_batch_moto_s_random_strings_are_the_same_draws_of_the_same_generator(length, digits, lower):
    """Request ids drawn plainly: the same strings, and the generator left where moto's own leaves it
    (every id drawn after them, a version id or a message id, is the same)."""
    from moto.moto_api._internal.moto_random import MotoRandom

    own, fast = MotoRandom(), MotoRandom()
    own.seed("idem-check/7")
    fast.seed("idem-check/7")
    expected = [own.get_random_string(length, digits, lower) for _ in range(50)]
    with fastcalls.fast_calls():
        got = [fast.get_random_string(length, digits, lower) for _ in range(50)]
    assert got == expected and fast.getrandbits(64) == own.getrandbits(64)


_names = st.text(alphabet="abSNLMB_", min_size=0, max_size=3)
_scalars = st.one_of(st.text(max_size=4), st.booleans(), st.integers(-3, 3), st.none(), st.lists(st.text(max_size=2), max_size=2))
_values = st.recursive(
    st.one_of(st.fixed_dictionaries({"S": st.text(max_size=4)}), st.fixed_dictionaries({"N": st.sampled_from(["1", "2.5"])}),
              st.fixed_dictionaries({"BOOL": st.booleans()}), st.fixed_dictionaries({"NULL": st.just(True)}),
              st.fixed_dictionaries({"SS": st.lists(st.text(max_size=2), max_size=3)}),
              st.fixed_dictionaries({"B": st.just("YWJj")}), st.fixed_dictionaries({"BS": st.just(["YWJj"])}),
              st.dictionaries(st.sampled_from(["S", "N", "BOOL", "NULL", "SS", "NS", "M", "L", "B", "s"]), _scalars,
                              max_size=2)),
    lambda inner: st.one_of(st.fixed_dictionaries({"M": st.dictionaries(_names, inner, max_size=3)}),
                            st.fixed_dictionaries({"L": st.lists(inner, max_size=3)})),
    max_leaves=8)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(item=st.dictionaries(st.sampled_from(["pk", "status", "m"]), _values, min_size=1, max_size=3))
def test_inside_a_batch_an_attribute_value_is_read_and_written_as_moto_s_own_walk_would(item):
    """fast_items: the request moto parses and the answer it writes are the same, key order included,
    for plain values (copied) and every other kind (binaries, two members, wrong types: moto's way)."""
    import json

    from moto.core.parse import JSONParser
    from moto.core.responses import get_service_model
    from moto.core.serialize import JSONSerializer, XFormedAttributePicker

    model = get_service_model("dynamodb")
    body = json.dumps({"TableName": "t", "Item": item})
    request = {"method": "POST", "values": {}, "headers": {}, "body": body.encode(), "url_path": "/", "url_params": {}}

    def both() -> tuple[str, str]:
        try:  # repr: the types and the key order too
            parsed = repr(JSONParser(model.operation_model("PutItem")).parse(request))
        except Exception as refused:  # what moto's own walk raises, raised the same
            parsed = type(refused).__name__
        writer = JSONSerializer(operation_model=model.operation_model("GetItem"), value_picker=XFormedAttributePicker())
        try:
            written = writer.serialize({"Item": item})["body"]
        except Exception as refused:
            written = type(refused).__name__
        return parsed, written

    expected = both()
    with fastcalls.fast_calls():
        assert both() == expected


def test_inside_a_batch_an_answer_s_headers_are_read_as_botocore_reads_them():
    """fast_reads: the same members from an S3 answer's headers (names in any case, a header given
    twice in two cases, user metadata, a date)."""
    from botocore import parsers
    from botocore.awsrequest import HeadersDict
    from botocore.session import get_session

    model = get_session().get_service_model("s3").operation_model("GetObject")
    headers = HeadersDict({"content-length": "7", "ETAG": '"abc"', "Last-Modified": "Thu, 01 Jan 2026 23:58:00 GMT",
                           "x-amz-version-id": "v1", "X-Amz-Meta-Order": "A-1", "x-amz-meta-order": "A-2",
                           "x-amz-delete-marker": "false", "Content-Type": "application/json"})
    answer = {"status_code": 200, "headers": headers, "body": b"{}", "context": {}}

    def parsed() -> str:
        return repr(parsers.create_parser("rest-xml").parse(dict(answer), model.output_shape))

    expected = parsed()
    with fastcalls.fast_calls():
        assert parsed() == expected
    assert "'Metadata': {'Order': 'A-2'}" in expected and "'VersionId': 'v1'" in expected


@pytest.mark.parametrize("host", ["bucket-one.s3.amazonaws.com", "s3.amazonaws.com", "s3.us-west-2.amazonaws.com",
                                  "localhost:5000", "127.0.0.1:5000", "[::1]:80", "minio.example.com", ""])
@pytest.mark.parametrize("custom", ["", "http://minio.example.com"])
def test_inside_a_batch_moto_judges_a_host_as_its_own_code_does(host, custom, monkeypatch):
    from moto.s3.responses import S3Response

    class Request:
        headers = {"host": host} if host else {}
        url = "https://bucket-two.s3.amazonaws.com/k"

    monkeypatch.setenv("MOTO_S3_CUSTOM_ENDPOINTS", custom)
    expected = S3Response.subdomain_based_buckets(Request())
    with fastcalls.fast_calls():
        assert S3Response.subdomain_based_buckets(Request()) is expected
        assert S3Response.subdomain_based_buckets(Request()) is expected
