"""A fresh local AWS: a bucket, the ledger and provider tables and a failure queue, on moto.

`LocalWorld` also plays S3's notifier: `upload()` puts a real object into the moto bucket
and builds the event S3 would send for it, with the fields moto leaves out (versionId,
sequencer). Resource names are unique per live world, so several worlds can coexist.
"""
from __future__ import annotations

import functools
import json
from typing import Any, Callable

import boto3
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.moto_api._internal import mock_random

from ..core.clock import VirtualClock, iso8601
from ..core.dynamo import from_item
from ..core.events import S3Object, s3_event
from ..core.ledger import BOOKS_INDEX
from ..core.reconcile.job import DAY_INDEX, DAY_INDEX_ATTRIBUTES
from ..core.ledger import Ledger
from ..core.provider import MemoryStore, Provider
from .atomic import make_dynamodb_atomic, make_transactions_item_scoped
from .platform.batch_keys import refuse_repeated_batch_keys
from .platform.legacy_parameters import judge_legacy_parameters
from .platform.partiql_insert import refuse_duplicate_inserts
from .platform.request_checks import refuse_invalid_requests
from .platform.sfn_express import express_starts_anew
from .platform.transact_tokens import remember_transaction_tokens
from .s3_uploads import UPLOAD_EVENTS
from .fastload import (cache_dataclass_compiles, cache_moto_alias_keys, cache_moto_condition_lexing,
                       cache_moto_method_names, cache_moto_url_tables, cache_timestamp_parsing)

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
#: The ledger table as template.yaml declares it (tests/test_template.py holds them together):
#: records keyed by `pk`, the sparse index of keyed's ledger lines by account (BOOKS_INDEX), and
#: the same lines by day, which the reconciliation Queries (DAY_INDEX).
LEDGER_TABLE_SHAPE: dict[str, Any] = {
    "BillingMode": "PAY_PER_REQUEST",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                             {"AttributeName": "account", "AttributeType": "S"},
                             {"AttributeName": "booked_at", "AttributeType": "N"},
                             {"AttributeName": "booked_day", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "GlobalSecondaryIndexes": [{
        "IndexName": BOOKS_INDEX,
        "KeySchema": [{"AttributeName": "account", "KeyType": "HASH"},
                      {"AttributeName": "booked_at", "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["cents", "charge_id"]}},
        {"IndexName": DAY_INDEX,
         "KeySchema": [{"AttributeName": "booked_day", "KeyType": "HASH"},
                       {"AttributeName": "booked_at", "KeyType": "RANGE"}],
         "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(DAY_INDEX_ATTRIBUTES)}}],
}
_mock = None
_live_prefixes: set[str] = set()


def ensure_moto() -> None:
    """Start moto once per process, with atomic conditional writes."""
    global _mock
    if _mock is None:
        _mock = mock_aws()
        _mock.start()
        # Once, here: a world created inside atomic.unpatched() must stay unpatched.
        make_dynamodb_atomic()
        make_transactions_item_scoped()
        remember_transaction_tokens()  # DynamoDB's ClientRequestToken, which moto ignores
        refuse_repeated_batch_keys()  # and a BatchWriteItem naming one item twice, which moto writes
        refuse_duplicate_inserts()  # and a PartiQL INSERT of a key the table has, which moto writes over it
        refuse_invalid_requests()  # and an unused placeholder or a Number DynamoDB cannot store, which moto takes
        judge_legacy_parameters()  # and legacy Expected (its OR, its Value compared, its refused forms) and AttributeUpdates
        express_starts_anew()  # and an EXPRESS state machine's StartExecution, which moto answers as a STANDARD one's
        cache_dataclass_compiles()  # every cold start loads the function's module afresh
        cache_moto_url_tables()  # every request finds its handler in moto's URL table
        cache_moto_method_names()  # and its action among its class's methods
        cache_moto_condition_lexing()  # and each conditional write its expression's tokens
        cache_timestamp_parsing()  # and each client its responses' timestamps
        cache_moto_alias_keys()  # and moto where each member of its answers is found


@functools.cache
def fake_session(region: str = REGION) -> boto3.Session:
    """A session with made-up credentials: requests can only ever reach moto.

    One per process: a session caches botocore's service models, which cost far more
    to load than any call to moto.
    """
    return boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                         aws_session_token="testing", region_name=region)


@functools.cache
def fake_client(service: str, region: str = REGION) -> Any:
    """A shared client (botocore clients are thread-safe)."""
    return fake_session(region).client(service)


def pk_text(pk: dict[str, Any] | None) -> str:
    """An item's `pk` attribute (DynamoDB's JSON, or None) as one string: how the check tells
    items it has already read from new ones (`LocalWorld.table_items`). A string key (the usual
    kind) as TYPE:VALUE, anything else as its JSON."""
    if isinstance(pk, dict) and len(pk) == 1:
        ((kind, value),) = pk.items()
        if isinstance(value, str):
            return f"{kind}:{value}"
    return json.dumps(pk, sort_keys=True)


def _stored_pk_text(item: Any) -> str:
    """pk_text of an item as moto stores it; a string key without turning the whole item into JSON."""
    pk = item.attrs.get("pk")
    if pk is not None and isinstance(pk.value, str):
        return pk_text({pk.type: pk.value})
    return pk_text(item.to_json()["Attributes"].get("pk"))  # a number, binary, map...: as a Scan shows it


def _claim_prefix(wanted: str) -> str:
    prefix, n = wanted, 1
    while prefix in _live_prefixes:
        n += 1
        prefix = f"{wanted}{n}"
    _live_prefixes.add(prefix)
    return prefix


def order_body(number: int) -> bytes:
    """The order file of a world's upload number `number` (1, 2, ...): a new order each time,
    named the same way in every run (`{"order_id": "order-00001", "amount_cents": 500}`,
    keyed_orders.py: the amount is required, there is no default price)."""
    return json.dumps({"order_id": f"order-{number:05d}", "amount_cents": DEMO_AMOUNT_CENTS}).encode()


#: What a world's default order costs (the price the workbook's stories have always charged).
DEMO_AMOUNT_CENTS = 500


def demo_account(key: str) -> str:
    """The account to link for an upload's key: its folder, or `unassigned` where the earlier patterns
    charge a key with no folder (common.account_of); keyed parks such a key whatever is linked."""
    folder, slash, _ = key.partition("/")
    return folder if slash and folder.strip() else "unassigned"


def opaque_etag() -> str:
    """An eTag that is no MD5 of the object's bytes, as S3 gives an object PUT under SSE-KMS ("not an MD5
    digest of their object data": https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html): each
    put its own, drawn from moto's seeded ids (`LocalWorld.seed_ids`), so the same in every run."""
    return f"{mock_random.getrandbits(128):032x}"


class LocalWorld:
    """The AWS resources one run of the workbook needs, created fresh on moto."""

    #: Set by `idem.sim.stripe.server.loopback_stripe`: what `provider()` hands out instead of
    #: the stand-in (Stripe's SDK aimed at a loopback server that keeps the stand-in's rules).
    wrap_provider: Callable[[Provider], Any] | None = None

    def __init__(self, *, versioned: bool = True, clock: VirtualClock | None = None,
                 prefix: str = "idem", seed: int = 0, provider_in_memory: bool = False,
                 link_customers: bool = True) -> None:
        """`link_customers`: each account that uploads is linked to a customer first (the customer
        mapping, idem.core.customers), as onboarding would: a demo account pays as the stand-in
        customer of its own name; off, an account pays only once a test links it.
        `provider_in_memory`: the provider stand-in keeps its charges and keys in this world's
        memory (`MemoryStore`) instead of its table, which is still created (empty) for
        PROVIDER_TABLE; what reads the table (the reconciliation job) then finds nothing."""
        ensure_moto()
        self.seed_ids(seed)  # moto's version ids and message ids: the same every run
        self.clock = clock or VirtualClock()
        self.versioned = versioned
        self.prefix = _claim_prefix(prefix)
        self.session = fake_session()
        self.s3 = fake_client("s3")
        self.dynamodb = fake_client("dynamodb")
        self.sqs = fake_client("sqs")
        self.bucket = f"{self.prefix}-uploads"
        self.ledger_table = f"{self.prefix}-ledger"
        self.provider_table = f"{self.prefix}-provider"
        self.queue_name = f"{self.prefix}-failures"
        self._uploads = 0
        self._uploaded: list[dict[str, str]] = []  # (key, version) of every upload(), for close()
        #: the bucket encrypts with a KMS key: a PutObject's eTag is no MD5 of its bytes (`_put_in_backend`)
        self.etags_not_md5 = False
        self.runtimes_started = 0
        self.provider_store: MemoryStore | None = MemoryStore() if provider_in_memory else None
        self.link_customers, self._linked = link_customers, set()
        self._create()

    @staticmethod
    def seed_ids(seed: int) -> None:
        """moto's version ids, message ids and request ids from here on: drawn from `seed`."""
        mock_random.seed(seed)

    @classmethod
    def attach(cls, *, bucket: str, ledger_table: str, provider_table: str, queue_url: str,
               clock: VirtualClock | None = None, versioned: bool = True) -> "LocalWorld":
        """Wrap moto resources that already exist (a deployed stack's). close() leaves them:
        whoever created them deletes them."""
        ensure_moto()
        world = cls.__new__(cls)
        world.clock, world.versioned, world.prefix = clock or VirtualClock(), versioned, ""
        world.session, world.s3 = fake_session(), fake_client("s3")
        world.dynamodb, world.sqs = fake_client("dynamodb"), fake_client("sqs")
        world.bucket, world.ledger_table, world.provider_table = bucket, ledger_table, provider_table
        world.queue_url, world.queue_name = queue_url, queue_url.rsplit("/", 1)[-1]
        world.queue_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{world.queue_name}"
        world._uploads = world.runtimes_started = 0
        world._uploaded, world.provider_store = [], None
        world.link_customers, world._linked = True, set()
        return world

    def _create(self) -> None:
        self.s3.create_bucket(Bucket=self.bucket)
        if self.versioned:
            self.s3.put_bucket_versioning(Bucket=self.bucket,
                                          VersioningConfiguration={"Status": "Enabled"})
        self.dynamodb.create_table(TableName=self.ledger_table, **LEDGER_TABLE_SHAPE)
        self.dynamodb.create_table(
            TableName=self.provider_table, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
        self.dynamodb.update_time_to_live(
            TableName=self.ledger_table,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"})
        self.queue_url = self.sqs.create_queue(QueueName=self.queue_name)["QueueUrl"]
        self.queue_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{self.queue_name}"

    def close(self) -> None:
        """Delete this world's resources and free its names."""
        if self.prefix not in _live_prefixes:
            return
        self._delete(self._uploaded)  # what upload() put, without listing it
        try:
            self.s3.delete_bucket(Bucket=self.bucket)
        except ClientError as error:  # something else wrote to the bucket: list it all
            if error.response.get("Error", {}).get("Code") != "BucketNotEmpty":
                raise
            for page in self.s3.get_paginator("list_object_versions").paginate(Bucket=self.bucket):
                self._delete([{"Key": v["Key"], "VersionId": v["VersionId"]}
                              for v in page.get("Versions", []) + page.get("DeleteMarkers", [])])
            self.s3.delete_bucket(Bucket=self.bucket)
        for table in (self.ledger_table, self.provider_table):
            self.dynamodb.delete_table(TableName=table)
        self.sqs.delete_queue(QueueUrl=self.queue_url)
        _live_prefixes.discard(self.prefix)

    def _delete(self, versions: list[dict[str, str]]) -> None:
        for start in range(0, len(versions), 1000):  # DeleteObjects takes up to 1,000 keys
            self.s3.delete_objects(Bucket=self.bucket,
                                   Delete={"Objects": versions[start:start + 1000], "Quiet": True})

    def __enter__(self) -> "LocalWorld":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the function's environment, as template.yaml would set it --------------------
    def env(self, mode: str = "keyed", **extra: str) -> dict[str, str]:
        return {"HANDLER_MODE": mode, "LEDGER_TABLE": self.ledger_table,
                "PROVIDER_TABLE": self.provider_table, **extra}

    # -- S3's side: a real put_object, and the notification S3 would send -------------
    def upload(self, key: str, body: bytes | None = None, *, etag: str | None = None,
               by: str = "PutObject", metadata: dict[str, str] | None = None) -> S3Object:
        """Put an object and describe its ObjectCreated event as S3 would. Without a body, an
        order file naming a new order (`order_body`): the keyed handler charges per order. `by`: the
        S3 API that uploads it (UPLOAD_EVENTS): a multipart upload is a real one, in one part.
        `metadata`: the uploader's user-defined metadata (`x-amz-meta-*`), as its PUT sends it."""
        if body is None:
            body = order_body(self._uploads + 1)
        if self.link_customers:
            self.link_demo_account(demo_account(key))
        if by == "CompleteMultipartUpload":
            response = self._multipart(key, body)
        else:  # a POST stores the object as a PUT does (its ETag the bytes' MD5)
            response = self._put_in_backend(key, body, metadata) if self.provider_store is not None \
                else self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, Metadata=metadata or {})
        self._uploads += 1
        self._uploaded.append({"Key": key, "VersionId": response.get("VersionId") or "null"})
        # S3 sequencers are hex, grow with each event for a key, and vary in length.
        sequencer = f"{int(self.clock.now() * 1000):012X}{self._uploads:06X}"
        return S3Object(
            bucket=self.bucket, key=key, size=len(body),
            etag=etag or response["ETag"].strip('"'),
            sequencer=sequencer,
            version_id=response.get("VersionId") if self.versioned else None,
            event_name=UPLOAD_EVENTS[by], event_time=iso8601(self.clock.now()), region=REGION)

    def _multipart(self, key: str, body: bytes) -> dict[str, Any]:
        """A multipart upload of `body` in one part (a last part may be under 5 MB)."""
        started = self.s3.create_multipart_upload(Bucket=self.bucket, Key=key)
        part = self.s3.upload_part(Bucket=self.bucket, Key=key, UploadId=started["UploadId"], PartNumber=1, Body=body)
        return dict(self.s3.complete_multipart_upload(Bucket=self.bucket, Key=key, UploadId=started["UploadId"],
                                                      MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]}))

    def _put_in_backend(self, key: str, body: bytes, metadata: dict[str, str] | None = None) -> dict[str, Any]:
        """put_object straight into moto's S3 backend, as `idem check`'s worlds do (the upload is
        S3's side, not the function's: no request to sign and parse for each schedule). The
        same object, version id and eTag as a PutObject makes."""
        from moto.s3.models import s3_backends  # moto's own state, as table_items reads it

        from .atomic import _LOCK

        with _LOCK:
            backend = s3_backends[ACCOUNT]["aws"]
            made = backend.put_object(self.bucket, key, body)
            # a PutObject with no x-amz-tagging makes an object with no tags; moto's backend put keeps
            # the tags of the object it replaces in an unversioned bucket (its PutObject resets them so)
            backend.put_object_tagging(made, {})
            if metadata:
                made.set_metadata({f"x-amz-meta-{name}": value for name, value in metadata.items()})
            if self.etags_not_md5:
                made._etag = opaque_etag()
        version = made.version_id if self.versioned else None
        return {"ETag": made.etag, **({"VersionId": version} if version else {})}

    def link_demo_account(self, account: str) -> None:
        """Onboard a demo account: link it to the stand-in customer of its own name, unless it is
        linked already (the handler reads the link; the uploader never writes it)."""
        if account in self._linked:
            return
        if self.provider_store is not None:  # `idem check`'s worlds: onboarding is not the function's side
            self.put_in_backend(self.ledger_table, {
                "pk": {"S": f"account#{account}"}, "kind": {"S": "customer"}, "account": {"S": account},
                "customer": {"S": account}, "linked_by": {"S": "idem.sim.world"}, "reason": {"S": "demo account"}},
                unless="customer")
            self._linked.add(account)
            return
        try:
            self.dynamodb.update_item(
                TableName=self.ledger_table, Key={"pk": {"S": f"account#{account}"}},
                UpdateExpression="SET #k = :kind, #a = :account, #c = :customer, linked_by = :by, #r = :reason",
                ConditionExpression="attribute_not_exists(#c)",
                ExpressionAttributeNames={"#k": "kind", "#a": "account", "#c": "customer", "#r": "reason"},
                ExpressionAttributeValues={":kind": {"S": "customer"}, ":account": {"S": account},
                                           ":customer": {"S": account}, ":by": {"S": "idem.sim.world"},
                                           ":reason": {"S": "demo account"}})
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
        self._linked.add(account)

    def put_in_backend(self, table: str, item: dict[str, Any], *, unless: str = "") -> None:
        """PutItem of `item` (DynamoDB's JSON) straight into moto's backend, as `_put_in_backend`
        puts an upload: a write on the platform's or an operator's side (a customer linked), not
        the function's, so no request to sign and parse (an UpdateItem through the client cost
        about a third of a check's schedule). `unless`: skipped when the item at its key already
        has that attribute (the condition attribute_not_exists(unless)); else its other attributes
        are kept, as UpdateItem's SET keeps them."""
        from moto.dynamodb.models import dynamodb_backends  # moto's own state, as table_items reads it

        from .atomic import _LOCK  # the lock every write to the backend takes

        with _LOCK:
            backend = dynamodb_backends[ACCOUNT][REGION]
            found = backend.get_item(table, {"pk": item["pk"]}) if unless else None
            if found is None:
                backend.put_item(table, item)
            elif unless not in found.attrs:
                backend.put_item(table, {**found.to_json()["Attributes"], **item})

    def send_to_queue(self, queue_url: str, body: str) -> None:
        """A message into one of this world's queues: straight into moto's SQS backend in
        `idem check`'s worlds (Lambda's failure record, or the mapping's move to a dead-letter
        queue, is the platform's side, not the function's: no request to sign and parse), else
        through SendMessage. The same message either way."""
        if self.provider_store is None:
            self.sqs.send_message(QueueUrl=queue_url, MessageBody=body)
            return
        from moto.sqs.models import sqs_backends

        from .atomic import _LOCK

        with _LOCK:
            sqs_backends[ACCOUNT][REGION].send_message(queue_url.rsplit("/", 1)[-1], body,
                                                       message_attributes={})

    def event(self, *objects: S3Object) -> dict[str, Any]:
        return s3_event(*objects)

    # -- reading back -----------------------------------------------------------------
    def ledger(self) -> Ledger:
        return Ledger(self.dynamodb, self.ledger_table, self.clock)

    def provider(self, clock: VirtualClock | None = None) -> Provider:
        """The provider stand-in, on this world's clock (or `clock`), over an unwatched
        client: its own calls are the provider's business, not the function's boundaries."""
        stand_in = Provider(self.dynamodb, self.provider_table, clock or self.clock, store=self.provider_store)
        return self.wrap_provider(stand_in) if self.wrap_provider else stand_in

    def table_items(self, table: str, leave_out: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """Every item of `table`, in DynamoDB's JSON as a consistent Scan returns it, read from
        moto's backend directly: a read-back without the Scan's serialization, which costs
        `idem check` more than the schedule it reads. Only a world on moto has this.
        `leave_out`: items whose `pk` (`pk_text`) is in it are left out, unread."""
        from moto.dynamodb.models import dynamodb_backends  # moto's own state, as empty_queue reads it

        from .atomic import _LOCK  # the lock every write to the backend takes

        with _LOCK:
            stored = dynamodb_backends[ACCOUNT][REGION].get_table(table)
            # moto's all_items, but the items left out are dropped before the sort, not after: the
            # same items in the same order, without sorting what a check has read already
            found = [item for kept in stored.items.values()
                     for item in (kept.values() if stored.range_key_attr else (kept,))]
            if leave_out:
                found = [item for item in found if _stored_pk_text(item) not in leave_out]
            if stored.range_key_attr or any(item.hash_key.type != "S" for item in found):
                found.sort(key=lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key)
            else:  # string keys alone: moto's DynamoType compares their texts, as this does, without its casts
                found.sort(key=lambda x: x.hash_key.value)
            return [item.to_json()["Attributes"] for item in found]

    def provider_charges(self) -> list[tuple[str, dict[str, Any]]]:
        """Every charge the provider stand-in made (a saved 500's included), from its own record:
        this world's memory store, where `idem check` keeps it, and the provider table, where a
        handler's own table-backed stand-in would. Each as (where it is kept and its item's key,
        the item: its reference, customer, amount and currency among its fields)."""
        kept = [("memory", item) for item in self.provider_store.charge_items()] \
            if self.provider_store is not None else []
        kept += [("table", from_item(item)) for item in self.table_items(self.provider_table)
                 if item.get("kind") == {"S": "charge"}]
        return [(f"{where}:{item['pk']}", item) for where, item in kept]

    def take_messages(self, queue_url: str) -> list[dict[str, Any]]:
        """Every message a receive would return now (visible, not delayed), taken out of the
        queue, each as {"Body": ...}: what receiving and deleting them all does, read from
        moto's backend directly, without a ReceiveMessage and a DeleteMessageBatch per ten."""
        from moto.sqs.models import sqs_backends  # moto's own state, as empty_queue reads it

        queue = sqs_backends[ACCOUNT][REGION].get_queue(queue_url.rsplit("/", 1)[-1])
        taken = queue.messages
        if taken:
            gone = set(map(id, taken))
            queue._messages = [m for m in queue._messages if id(m) not in gone]
        return [{"Body": m.body} for m in taken]

    def failure_queue(self) -> list[dict[str, Any]]:
        """Every message in the failure queue, left in the queue afterwards."""
        messages: list[dict[str, Any]] = []
        while True:  # hide each batch while reading, so the next receive returns new ones
            batch = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10,
                                             VisibilityTimeout=60).get("Messages", [])
            if not batch:
                break
            messages.extend(batch)
        for start in range(0, len(messages), 10):  # then make them visible again
            self.sqs.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                for n, m in enumerate(messages[start:start + 10])])
        return [json.loads(m["Body"]) for m in messages]

    def failure_queue_depth(self) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"])
        return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def empty_queue(queue_url: str) -> None:
    """Drop every message of a moto queue at once: PurgeQueue without its 60-second limit.
    (A queue that outlives its world cannot be emptied by deleting receipt handles: moto's,
    seeded per world, repeat, and a handle seen before is taken as deleted already.)"""
    from moto.sqs.models import sqs_backends  # moto's own state: only a local world has it

    queue = sqs_backends[ACCOUNT][REGION].get_queue(queue_url.rsplit("/", 1)[-1])
    queue._messages = []
    queue.pending_messages.clear()
