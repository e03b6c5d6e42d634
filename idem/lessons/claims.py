"""Claims for one piece of work under pressure: real threads, moto as shipped, what a lost
conditional put hands back, and what each way of claiming costs in calls (chapter 02).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from botocore.exceptions import ClientError

from ..core.dynamo import from_item, to_item
from ..core.ledger import Ledger
from ..sim import atomic
from ..sim.boundary import calls_made, watched_session
from ..explore.race import RaceReport, race, run_rounds
from ..sim.world import LocalWorld


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


def lost_put(world: LocalWorld, key: str, holder: str, loser: str = "second-invocation") -> dict[str, Any]:
    """Put `key` for `holder`, then again for `loser`, both with attribute_not_exists(pk) and
    ALL_OLD; return what the loser's failed put gets back (without the transport metadata)."""
    request = dict(TableName=world.ledger_table, ConditionExpression="attribute_not_exists(pk)",
                   ReturnValuesOnConditionCheckFailure="ALL_OLD")
    world.dynamodb.put_item(Item=to_item({"pk": key, "status": "claimed", "owner": holder}), **request)
    try:
        world.dynamodb.put_item(Item=to_item({"pk": key, "status": "claimed", "owner": loser}), **request)
    except ClientError as error:
        return {k: v for k, v in error.response.items() if k != "ResponseMetadata"}
    raise AssertionError("the second conditional put succeeded: the table is not enforcing conditions")


@dataclass(frozen=True)
class ClaimCost:
    approach: str
    winner_calls: int  # DynamoDB calls the copy that takes the work makes to take it
    duplicate_calls: int  # DynamoDB calls a duplicate makes before it stands down
    duplicate_learns: str  # what the duplicate knows afterwards


def claim_costs(world: LocalWorld) -> list[ClaimCost]:
    """Three ways to take one piece of work, each tried twice on a fresh key (the winner, then a
    duplicate), with the DynamoDB calls each try made counted where they leave the process."""
    client = watched_session().client("dynamodb")
    ledger = Ledger(client, world.ledger_table, world.clock)
    rows: list[ClaimCost] = []

    def measure(approach: str, take: Callable[[str, str], str]) -> None:
        key = f"charge#cost#{len(rows)}"
        _, first = calls_made(lambda: take(key, "invocation-a"))
        learned, again = calls_made(lambda: take(key, "invocation-b"))
        rows.append(ClaimCost(approach, first, again, learned))

    def conditional_put(key: str, _: str) -> str:
        return f"won={ledger.claim_once(key).won}, nothing else"

    def with_all_old(key: str, owner: str) -> str:
        try:
            client.put_item(TableName=world.ledger_table, Item=to_item({"pk": key, "status": "claimed",
                                                                        "owner": owner}),
                            ConditionExpression="attribute_not_exists(pk)",
                            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return f"won=False, owner={from_item(error.response['Item'])['owner']}"
        return "won=True"

    def read_then_put(key: str, _: str) -> str:
        record = ledger.get_record(key)
        if record is None:
            return f"won={ledger.claim_once(key).won}"
        return f"status={record.status} (from the read)"

    measure("conditional put", conditional_put)
    measure("conditional put, ALL_OLD", with_all_old)
    measure("read, then conditional put", read_then_put)
    return rows
