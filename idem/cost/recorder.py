"""What each request a DynamoDB client makes is billed, recorded as it is made (the rules: `idem.cost.capacity`).

A `CapacityRecorder` attaches to any boto3 DynamoDB client through botocore event hooks and
records every data-plane request the client makes: the operation, its parameters, whether it
succeeded, failed its condition or was cancelled, the sizes of the items involved, and the
write and read request units (WRU, RRU) DynamoDB bills for it in on-demand mode:

    with CapacityRecorder(client) as meter:
        ledger.claim(key, owner, lease_until)
    totals = meter.summary().per_event(1)
    print(totals.wru, totals.rru, totals.dollars())

How the recorder knows item sizes. Billing depends on the item as stored before and after a
write, which a request does not carry (an UpdateItem names a key and an expression). So, for
each write, the recorder reads the items it targets with a strongly consistent GetItem just
before the request is sent, and reads the updated items again just after. Those reads go
through a second client (`reader`, by default `unwatched_twin(client)`: same endpoint, region
and credentials, none of the watched client's hooks), so they are not recorded, not counted
by counters on the watched client's session, and not hit by faults injected there. Under
concurrent writers to the same item the two reads can straddle another writer's change; the
sizes are then those of a neighbouring state. Reads (GetItem, BatchGetItem, TransactGetItems)
are sized from the full items (a projection does not reduce the bill), Query and Scan from the
items evaluated (a filter does not reduce it): when a request projects or filters, the
recorder runs it again through the reader without the projection or filter. The recorder is
meant for moto: against real AWS its own reads would be billed too.

What moto 5.2.1 reports when asked (`ReturnConsumedCapacity`) is kept in each record as
`reported`, for comparison; moto's numbers are constants, not sizes (see the tests). The pages
the comments name in capitals (READS_AND_WRITES, TRANSACTIONS, ...) are `idem.cost.capacity`'s.
"""
from __future__ import annotations

import json
import re
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import boto3
from botocore.handlers import BUILTIN_HANDLERS

from .capacity import (ABSENT_ITEM_WRITE_UNITS, CANCELLED, CONDITION_FAILED, ERROR, NO_RESPONSE, OK, TTL_DELETE,
                       UNMETERED, CapacitySummary, RequestCost, TableShape, item_size, read_units, write_units)


# -- the recorder -----------------------------------------------------------------------------------
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
READS = {"GetItem", "BatchGetItem", "TransactGetItems", "Query", "Scan"}
PARTIQL = {"ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"}
METERED = WRITES | READS | PARTIQL
#: Request parameters that narrow what a Query or Scan returns but not what it reads: "a Query
#: consumes the same amount of read capacity, regardless of whether a filter expression is
#: present" (QUERY_FILTERS); Scan "considers the size of the items that are evaluated, not the
#: size of the items returned" and a subset of attributes "has no impact on the item size
#: calculations" (READS_AND_WRITES).
NARROWING = ("FilterExpression", "ProjectionExpression", "AttributesToGet", "Select",
             "ScanFilter", "QueryFilter", "ConditionalOperator")
_PLACEHOLDER = re.compile(r"[#:][A-Za-z0-9_]+")


#: One private session, reused (its loaded models make later twins cheap), renewed when
#: botocore's built-in handlers change: moto adds its request interceptor there on import, and
#: only sessions created afterwards carry it. A twin must reach what the watched client reaches.
_twin_session: dict[str, Any] = {}
_twin_lock = threading.Lock()


def unwatched_twin(client: Any) -> Any:
    """A second DynamoDB client to `client`'s endpoint and region, with none of its hooks.

    It comes from a session of this module's own, on which nothing registers handlers.
    """
    credentials = client._request_signer._credentials  # botocore has no public accessor for them
    keys: dict[str, str] = {}
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        keys = {"aws_access_key_id": frozen.access_key, "aws_secret_access_key": frozen.secret_key}
        if frozen.token:
            keys["aws_session_token"] = frozen.token
    with _twin_lock:
        if _twin_session.get("handlers") != len(BUILTIN_HANDLERS):
            _twin_session.update(session=boto3.session.Session(), handlers=len(BUILTIN_HANDLERS))
        return _twin_session["session"].client(
            "dynamodb", region_name=client.meta.region_name, endpoint_url=client.meta.endpoint_url,
            config=client.meta.config, **keys)


def _key_id(table: str, key: Mapping[str, Any]) -> str:
    return json.dumps([table, key], sort_keys=True, default=repr)


class CapacityRecorder:
    """Records what each DynamoDB request made through `client` is billed.

    `attach()` (or `with`) registers the hooks on `client.meta.events`; `detach()` removes
    them. `requests` holds a `RequestCost` per request; `summary()` totals them.
    `cancelled_transaction_factor` is the assumption for cancelled transactions (see
    `_transact_write`): 1 bills each item's prepare write, 2 bills as if committed, 0 nothing.
    """

    def __init__(self, client: Any, reader: Any = None, *,
                 cancelled_transaction_factor: float = 1.0) -> None:
        self.client = client
        self.reader = reader
        self.cancelled_transaction_factor = cancelled_transaction_factor
        self.requests: list[RequestCost] = []
        self._shapes: dict[str, TableShape] = {}
        self._lock = threading.Lock()
        self._ttl = threading.local()
        self._id = f"idem-capacity-{id(self)}"
        self._attached = False

    # -- attaching ---------------------------------------------------------------------------
    def attach(self) -> "CapacityRecorder":
        if self._attached:
            return self
        self.reader = self.reader or unwatched_twin(self.client)
        events = self.client.meta.events
        events.register("before-parameter-build.dynamodb", self._capture,
                        unique_id=self._id + "-params")
        # Last in line: a hook that answers in before-call stops the chain, and the request
        # never leaves; the recorder only bills requests that reach its own before-call hook.
        events.register_last("before-call.dynamodb", self._before, unique_id=self._id + "-before")
        # First in line: a hook that raises after the call (a lost response) must not stop the
        # bill for a request DynamoDB executed. botocore calls the handlers of the most specific
        # event name first, so the recorder registers first on each operation's own name.
        for operation in sorted(METERED):
            events.register_first(f"after-call.dynamodb.{operation}", self._after,
                                  unique_id=f"{self._id}-after-{operation}")
            events.register_first(f"after-call-error.dynamodb.{operation}", self._lost,
                                  unique_id=f"{self._id}-lost-{operation}")
        self._attached = True
        return self

    def detach(self) -> None:
        events = self.client.meta.events
        events.unregister("before-parameter-build.dynamodb", unique_id=self._id + "-params")
        events.unregister("before-call.dynamodb", unique_id=self._id + "-before")
        for operation in sorted(METERED):
            events.unregister(f"after-call.dynamodb.{operation}",
                              unique_id=f"{self._id}-after-{operation}")
            events.unregister(f"after-call-error.dynamodb.{operation}",
                              unique_id=f"{self._id}-lost-{operation}")
        self._attached = False

    def __enter__(self) -> "CapacityRecorder":
        return self.attach()

    def __exit__(self, *exc: Any) -> None:
        self.detach()

    def summary(self) -> CapacitySummary:
        with self._lock:
            return CapacitySummary.of(list(self.requests))

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    @contextmanager
    def ttl_deletions(self) -> Iterator[None]:
        """Deletes made in this block (this thread) stand for TTL expiry and are free.

        DynamoDB "deletes the item from your table without consuming any write throughput"
        (TTL_OVERVIEW); "the nature of the capacity used to expire and delete items via TTL is
        variable (but free of charge)" (TTL); expired items also leave the indexes "at no extra
        cost" (TTL). With global tables, the replicated deletes are billed. moto never
        expires items, so a local runtime that sweeps expired records does it with DeleteItem;
        inside this block those deletes are recorded as `ttl_delete`, at no cost.
        """
        self._ttl.active = True
        try:
            yield
        finally:
            self._ttl.active = False

    # -- the hooks ------------------------------------------------------------------------------
    def _capture(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if model.name in METERED:  # the dict later handlers may still fill in
            context[self._id] = {"operation": model.name, "params": params}

    def _before(self, context: dict[str, Any], **_: Any) -> None:
        state = context.get(self._id)
        if state is None:
            return
        state["sent"] = True
        if state["operation"] not in WRITES:
            return
        try:
            targets = self._targets(state["operation"], state["params"])
            state["before"] = {target: self._get(table, key)
                               for target, (table, key) in targets.items()}
        except Exception as error:  # never break the caller's request; the request says why
            state["unsized"] = f"could not read the items before the request: {error!r}"

    def _after(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        state = context.pop(self._id, None)
        if state is None or not state.get("sent"):
            return  # answered by a hook before it was sent: DynamoDB never saw it
        code = parsed.get("Error", {}).get("Code", "")
        outcome = {"": OK, "ConditionalCheckFailedException": CONDITION_FAILED,
                   "TransactionCanceledException": CANCELLED}.get(code, ERROR)
        operation, params = state["operation"], state["params"]
        try:
            if "unsized" in state and outcome != ERROR:
                raise RuntimeError(state["unsized"])
            cost = self._meter(operation, params, state.get("before", {}), parsed, outcome)
        except Exception as error:  # never break the caller's request; the record says why
            cost = RequestCost(operation, _tables(params), UNMETERED, params=params,
                               note=f"{outcome}: {error}")
        self._record(cost)

    def _lost(self, context: dict[str, Any], **_: Any) -> None:
        # The request left but no response came back: whether DynamoDB ran it is unknown here.
        state = context.pop(self._id, None)
        if state is not None and state.get("sent"):
            self._record(RequestCost(state["operation"], _tables(state["params"]), NO_RESPONSE,
                                     params=state["params"]))

    def _record(self, cost: RequestCost) -> None:
        with self._lock:
            self.requests.append(cost)

    # -- reading around the request (through the reader, unrecorded) ------------------------
    def shape(self, table: str) -> TableShape:
        with self._lock:
            known = self._shapes.get(table)
        if known is None:
            known = TableShape.from_description(self.reader.describe_table(TableName=table)["Table"])
            with self._lock:
                self._shapes[table] = known
        return known

    def _get(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.reader.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")

    def _targets(self, operation: str,
                 params: Mapping[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
        """(table, key) of every item a write names, by an id for that item."""
        found: list[tuple[str, dict[str, Any]]] = []
        if operation == "PutItem":
            found.append((params["TableName"], self.shape(params["TableName"]).key_of(params["Item"])))
        elif operation in ("UpdateItem", "DeleteItem"):
            found.append((params["TableName"], params["Key"]))
        elif operation == "BatchWriteItem":
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        found.append((table, self.shape(table).key_of(request["PutRequest"]["Item"])))
                    else:
                        found.append((table, request["DeleteRequest"]["Key"]))
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                (kind, action), = entry.items()
                table = action["TableName"]
                found.append((table, self.shape(table).key_of(action["Item"]) if kind == "Put"
                              else action["Key"]))
        return {_key_id(table, key): (table, key) for table, key in found}

    # -- metering -------------------------------------------------------------------------------
    def _meter(self, operation: str, params: dict[str, Any], before: dict[str, Any],
               parsed: dict[str, Any], outcome: str) -> RequestCost:
        reported = parsed.get("ConsumedCapacity")
        tables = _tables(params)
        if operation in PARTIQL:  # PartiQL is billed like the API calls it stands for; not priced here
            return RequestCost(operation, tables, UNMETERED, reported=reported, params=params)
        if outcome == ERROR:
            # Requests DynamoDB rejects (validation, throttling, missing table) are not counted
            # as consuming capacity here: the guide bills reads and writes performed, and names
            # failed conditions as the exception.
            return RequestCost(operation, tables, ERROR, reported=reported, params=params)
        if getattr(self._ttl, "active", False) and operation in ("DeleteItem", "BatchWriteItem"):
            return RequestCost(operation, tables, TTL_DELETE, params=params)
        if operation == "TransactWriteItems":
            cost = self._transact_write(params, before, parsed, outcome)
        elif operation in WRITES:
            cost = self._write(operation, params, before, parsed, outcome)
        else:
            cost = self._read(operation, params, parsed)
        return RequestCost(operation, tables, outcome, float(cost["wru"]), float(cost["rru"]),
                           float(cost["index_wru"]), tuple(cost["bytes"]), reported, params)

    def _write(self, operation: str, params: dict[str, Any], before: dict[str, Any],
               parsed: dict[str, Any], outcome: str) -> dict[str, Any]:
        """PutItem, UpdateItem, DeleteItem and BatchWriteItem (READS_AND_WRITES).

        - PutItem: "If an item with the same primary key exists in the table, the operation
          replaces the item ... the item size that matters is the larger of the two."
        - UpdateItem: "DynamoDB considers the size of the item as it appears before and after
          the update ... the larger of these item sizes", even for a subset of attributes.
        - DeleteItem: "based on the size of the deleted item".
        - BatchWriteItem: "processes each item in the batch as an individual PutItem or
          DeleteItem request ... first rounds up the size of each item to the next 1 KB boundary,
          and then calculates the total size". Unprocessed items are not counted.
        - Conditional writes: "If the expression evaluates to false, DynamoDB still consumes
          write capacity units from the table": for an existing item, by its size; "For a new
          item, DynamoDB consumes one write capacity unit." The guide's wording moved over the
          years from the size of the existing item (2019) to that of the new item (2023) and
          to the larger of the two (the current page, as summarised by a third party); the
          larger of the existing item and a PutItem's new item is billed here. A failed
          UpdateItem's would-be item is never computed: its existing item is billed.
        """
        unprocessed = set(self._targets("BatchWriteItem", {
            "RequestItems": parsed.get("UnprocessedItems", {})}))
        wru = index_wru = 0
        sizes = []
        for target, (table, key) in self._targets(operation, params).items():
            if target in unprocessed:
                continue
            old = before.get(target)
            new = self._new_item(operation, params, table, key, target)
            if outcome == CONDITION_FAILED:
                if old is None:
                    wru += ABSENT_ITEM_WRITE_UNITS
                    sizes.append(0)
                    continue
                size = max(item_size(old), item_size(new) if operation == "PutItem" else 0)
                wru += write_units(size)
                sizes.append(size)
                continue
            after = self._get(table, key) if operation == "UpdateItem" else new
            size = max(item_size(old), item_size(after))
            index = self.shape(table).index_write_units(old, after)
            wru += write_units(size) + index
            index_wru += index
            sizes.append(size)
        return {"wru": wru, "rru": 0.0, "index_wru": index_wru, "bytes": sizes}

    def _new_item(self, operation: str, params: Mapping[str, Any], table: str,
                  key: Mapping[str, Any], target: str) -> dict[str, Any] | None:
        """The item a Put writes; None for deletes and updates (an update's is read after)."""
        if operation == "PutItem":
            return params["Item"]
        if operation == "BatchWriteItem":
            for request in params["RequestItems"][table]:
                item = request.get("PutRequest", {}).get("Item")
                if item is not None and _key_id(table, self.shape(table).key_of(item)) == target:
                    return item
        return None

    def _transact_write(self, params: dict[str, Any], before: dict[str, Any],
                        parsed: dict[str, Any], outcome: str) -> dict[str, Any]:
        """TransactWriteItems: two writes per item, per KB, each item rounded (TRANSACTIONS).

        "Each item requires two write capacity units (WCUs): one to prepare the transaction and
        one to commit the transaction" (three 500-byte items: six). Every action counts,
        ConditionCheck included, sized on the item it reads: AWS's pages do not size a
        ConditionCheck; a third-party conformance suite measured 2 WRUs for a small one
        against real DynamoDB (github.com/paritysuite/dynamodb-conformance/pull/67).
        Index writes are added at the standard rate: the guide does not say whether the
        transactional factor applies to them; a third party measured that it does not
        (github.com/nubo-db/dynoxide/pull/188).

        A transaction cancelled by a failed condition: AWS's pages do not say what it consumes.
        The response carries no ConsumedCapacity (measured against real DynamoDB by
        paritysuite/dynamodb-conformance#67; moto 5.2 behaves the same). Every item was
        prepared (the cancellation reasons name each item, `None` for those that passed), and
        a failed conditional write is billed outside transactions, so by default each item is
        billed its prepare write: `cancelled_transaction_factor` (1) times its standard units.
        This is an assumption; set the factor to 2 (billed as if committed) or 0 to compare.

        Not modelled: a retry with the same ClientRequestToken, which DynamoDB answers from the
        first call and bills as reads of the items (TRANSACTIONS, "Idempotency").
        """
        cancelled = outcome != OK
        wru = index_wru = 0.0
        sizes = []
        for (target, (table, key)), entry in zip(self._targets("TransactWriteItems", params).items(),
                                                 params["TransactItems"]):
            (kind, action), = entry.items()
            old = before.get(target)
            if kind == "Put":
                after = action["Item"]
            elif kind == "Update" and not cancelled:
                after = self._get(table, key)
            elif kind == "ConditionCheck":
                after = old
            else:
                after = None
            size = max(item_size(old), item_size(after))
            sizes.append(size)
            if cancelled:
                wru += self.cancelled_transaction_factor * write_units(size)
                continue
            index = self.shape(table).index_write_units(old, after) if kind != "ConditionCheck" else 0
            wru += write_units(size, transactional=True) + index
            index_wru += index
        return {"wru": wru, "rru": 0.0, "index_wru": index_wru, "bytes": sizes}

    def _read(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> dict[str, Any]:
        """GetItem, BatchGetItem, TransactGetItems, Query and Scan (READS_AND_WRITES).

        - GetItem: "take the item size and round it up to the next 4 KB boundary ... For an
          eventually consistent read (the default), divide this number by two." A missing item
          still costs the minimum.
        - BatchGetItem: "DynamoDB first rounds up the size of each item to the next 4 KB
          boundary, and then calculates the total size" (1.5 KB + 6.5 KB: 12 KB).
        - TransactGetItems: two reads per item, per 4 KB (TRANSACTIONS), missing items too.
        - Query: "DynamoDB computes the total size of all items and then rounds up to the next
          4 KB boundary"; Scan: "the size of the items that are evaluated". Both are
          eventually consistent unless ConsistentRead; an index query always is (GSI_READS),
          and is sized on the index entries. With nothing found, the minimum is billed: the
          current page adds a charge "based on ... the number of partitions searched", which
          cannot be seen from here.
        """
        if operation == "GetItem":
            item = (self._get(params["TableName"], params["Key"]) if _narrowed(params)
                    else parsed.get("Item"))
            size = item_size(item)
            return _reads(read_units(size, params.get("ConsistentRead", False)), [size])
        if operation == "BatchGetItem":
            rru, sizes = 0.0, []
            for table, request in params["RequestItems"].items():
                skipped = {_key_id(table, key) for key in
                           parsed.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])}
                for key in request["Keys"]:
                    if _key_id(table, key) not in skipped:
                        size = item_size(self._get(table, key))
                        rru += read_units(size, request.get("ConsistentRead", False))
                        sizes.append(size)
            return _reads(rru, sizes)
        if operation == "TransactGetItems":
            sizes = [item_size(self._get(get["Get"]["TableName"], get["Get"]["Key"]))
                     for get in params["TransactItems"]]
            return _reads(sum(read_units(size, True, transactional=True) for size in sizes), sizes)
        items = parsed.get("Items", []) if not _narrowed(params) else self._evaluated(operation, params)
        sizes = [item_size(item) for item in items]
        return _reads(read_units(sum(sizes), params.get("ConsistentRead", False)), sizes)

    def _evaluated(self, operation: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The items a filtered or projected Query/Scan read: the same request, unnarrowed."""
        plain = {name: value for name, value in params.items()
                 if name not in NARROWING + ("ExpressionAttributeNames", "ExpressionAttributeValues",
                                             "ReturnConsumedCapacity")}
        used = set(_PLACEHOLDER.findall(params.get("KeyConditionExpression", "")))
        for name in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            kept = {k: v for k, v in params.get(name, {}).items() if k in used}
            if kept:
                plain[name] = kept
        if "IndexName" in params:
            plain["Select"] = "ALL_PROJECTED_ATTRIBUTES"
        call = self.reader.query if operation == "Query" else self.reader.scan
        return call(**plain).get("Items", [])


def _narrowed(params: Mapping[str, Any]) -> bool:
    return any(name in params for name in NARROWING)


def _reads(rru: float, sizes: list[int]) -> dict[str, Any]:
    return {"wru": 0, "rru": rru, "index_wru": 0, "bytes": sizes}


def _tables(params: Mapping[str, Any]) -> tuple[str, ...]:
    if "TableName" in params:
        return (params["TableName"],)
    if "RequestItems" in params:
        return tuple(params["RequestItems"])
    names = {next(iter(entry.values()))["TableName"] for entry in params.get("TransactItems", ())}
    return tuple(sorted(names))
