"""Claims for one piece of work under pressure: real threads, moto as shipped, what a lost
conditional put hands back, and what each way of claiming costs in calls (chapter 02).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from botocore.exceptions import ClientError

from ..core.dynamo import to_item
from ..core.handlers.keyed import KeyedLedger
from ..core.ledger import Ledger
from . import atomic
from .boundary import calls_made, watched_session
from .race import RaceReport, race, run_rounds
from .world import LocalWorld


def race_with_condition(condition: str | None, threads: int = 8, rounds: int = 20) -> RaceReport:
    """Race `threads` real threads putting the same fresh key each round, with `condition`
    as the put's ConditionExpression (None or "" for an unconditional put)."""
    if threads < 2 or rounds < 1:
        raise ValueError("a race needs at least 2 threads and 1 round")
    extra = {"ConditionExpression": condition} if condition else {}
    with LocalWorld(prefix="race") as world:
        client, table = world.dynamodb, world.ledger_table
        wins = [[False] * threads for _ in range(rounds)]

        def put(index: int, n: int) -> None:
            try:
                client.put_item(TableName=table, Item=to_item({"pk": f"race#{n}"}), **extra)
                wins[n][index] = True
            except ClientError as error:
                if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise

        try:
            run_rounds(threads, rounds, put)
        except ClientError as error:
            raise ValueError(f"DynamoDB refused the condition {condition!r}: "
                             f"{error.response['Error']['Message']}") from None
        except Exception as error:  # moto in-process raises some parse errors as-is
            raise ValueError(f"DynamoDB refused the condition {condition!r}: "
                             f"{type(error).__name__}: {error}") from None
    return RaceReport(f"condition {condition or '(none)'}", threads, rounds, tuple(map(sum, wins)))


def moto_as_shipped_race(threads: int = 8, rounds: int = 20, window: float = 0.002) -> RaceReport:
    """The conditional put against moto *without* idem's lock, its read-check-write gap
    widened by `window` seconds. The counts vary from run to run: that is the point."""
    with LocalWorld(prefix="race") as world:  # built first: a new world re-applies the lock
        with atomic.unpatched(), atomic.widened_condition_window(window):
            return race(threads, rounds, "conditional_put", world=world)


def failed_put_response(world: LocalWorld, key: str = "charge#demo") -> dict[str, Any]:
    """Put `key` twice with attribute_not_exists(pk) and ALL_OLD; return what the second,
    failed put gets back (without the transport metadata, which changes every run)."""
    item = to_item({"pk": key, "status": "claimed", "owner": "first-invocation"})
    request = dict(TableName=world.ledger_table, Item=item,
                   ConditionExpression="attribute_not_exists(pk)",
                   ReturnValuesOnConditionCheckFailure="ALL_OLD")
    world.dynamodb.put_item(**request)
    try:
        world.dynamodb.put_item(**{**request, "Item": to_item({"pk": key, "status": "claimed",
                                                               "owner": "second-invocation"})})
    except ClientError as error:
        return {k: v for k, v in error.response.items() if k != "ResponseMetadata"}
    raise AssertionError("the second conditional put succeeded: the table is not enforcing conditions")


@dataclass(frozen=True)
class CostRow:
    approach: str
    first_calls: int  # DynamoDB calls the invocation that does the work makes to claim it
    duplicate_calls: int  # calls a duplicate makes before it stands down
    duplicate_learns: str


def claim_costs(world: LocalWorld) -> list[CostRow]:
    """What claiming costs, counted at the boundary: for the first caller and a duplicate."""
    rows = []
    client = watched_session().client("dynamodb")
    ledger = Ledger(client, world.ledger_table, world.clock)
    keyed = KeyedLedger(client, world.ledger_table, now=world.clock.now)

    def measure(name: str, attempt: Callable[[Ledger, str], Any]) -> None:
        key = f"charge#cost#{len(rows)}"
        _, first = calls_made(lambda: attempt(ledger, key))
        learned, again = calls_made(lambda: attempt(ledger, key))
        rows.append(CostRow(name, first, again, learned))

    def claim_once(ledger: Ledger, key: str) -> str:
        return f"won={ledger.claim_once(key).won} (nothing else)"

    owners = iter(("invocation-a", "invocation-b"))

    def claim_all_old(ledger: Ledger, key: str) -> str:
        claim = keyed.claim(key, owner=next(owners), lease_until=world.clock.now() + 30)
        return "won=True" if claim.won else (f"won=False, status={claim.existing.status}, "
                                             f"owner={claim.existing.owner}")

    def read_then_put(ledger: Ledger, key: str) -> str:
        record = ledger.get_record(key)
        if record is None:
            ledger.put_in_progress(key)
            return "won=True"
        return f"status={record.status} (from the read)"

    measure("claim_once: conditional put", claim_once)
    measure("KeyedLedger.claim: conditional put + ALL_OLD", claim_all_old)
    measure("get_record, then put_in_progress", read_then_put)
    return rows
