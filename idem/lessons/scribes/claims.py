"""Claims for one piece of work under pressure: real threads, moto as shipped, what a lost
conditional put hands back, and what each way of claiming costs in calls (chapter 02).
"""
from __future__ import annotations

import hashlib
import itertools
import threading
from dataclasses import dataclass
from typing import Any, Callable

from botocore.exceptions import ClientError

from ...core.dynamo import from_item, to_item
from ...core.ledger import Ledger
from ...sim import atomic
from ...sim.boundary import calls_made
from ...sim.sessions import watched_session
from ...sim.world import LocalWorld
from ...explore.race import RaceReport, race, read_then_write, run_rounds, switch_interval
from ..answers import not_yet, unfilled


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


def lost_put(world: LocalWorld, key: str, holder: str, loser: str = "second-invocation",
             expires_at: int | None = None) -> dict[str, Any]:
    """Put `key` for `holder` (with `expires_at`, when given), then again for `loser`, both with
    attribute_not_exists(pk) and ALL_OLD; return what the loser's failed put gets back (without
    the transport metadata)."""
    request = dict(TableName=world.ledger_table, ConditionExpression="attribute_not_exists(pk)",
                   ReturnValuesOnConditionCheckFailure="ALL_OLD")
    held = {"pk": key, "status": "claimed", "owner": holder}
    if expires_at is not None:
        held["expires_at"] = expires_at
    world.dynamodb.put_item(Item=to_item(held), **request)
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


# -- the race without the barrier: how often the unlucky order comes by itself ---------------------
#: The name the unrigged race reports under.
UNRIGGED = "read_then_write, no barrier"


def unrigged_race(threads: int = 8, rounds: int = 50, switch: float | None = 1e-6) -> RaceReport:
    """Race chapter 02's `read_then_write` with nothing holding the racers between the read and
    the write (its gap is a barrier of one party, which never waits). Every round starts all
    threads at once on a fresh key, as `race` does; who wins is then up to the thread scheduler,
    so the count changes from run to run."""
    if threads < 2 or rounds < 1:
        raise ValueError("a race needs at least 2 threads and 1 round")
    with LocalWorld(prefix="race") as world:
        ledgers = [world.ledger() for _ in range(threads)]
        keys = [f"race#unrigged#{world.prefix}#{n}" for n in range(rounds)]
        wins = [[False] * threads for _ in range(rounds)]

        def work(index: int, n: int) -> None:
            wins[n][index] = read_then_write(ledgers[index], keys[n], threading.Barrier(1))

        with switch_interval(switch):
            run_rounds(threads, rounds, work)
    return RaceReport(UNRIGGED, threads, rounds, tuple(map(sum, wins)))


def rounds_until_a_double_win(threads: int = 8, batch: int = 50, limit: int = 2000) -> int | None:
    """Race `unrigged_race` in batches until a round has two or more winners: the number of
    rounds raced by then, or None if `limit` rounds went by without one."""
    raced = 0
    while raced < limit:
        report = unrigged_race(threads, min(batch, limit - raced))
        for n, winners in enumerate(report.winners_per_round, start=1):
            if winners > 1:
                return raced + n
        raced += report.rounds
    return None


# -- chapter 02's exercise: who holds the claim, from the lost put's response ----------------------
_EXERCISE_KEYS = itertools.count(1)  # a fresh claim for every check


def check_holder_of(holder_of: Callable[[dict[str, Any]], Any], world: LocalWorld,
                    seen: str = "first-invocation") -> str:
    """Make two claims held by holders the reader has not seen, each with an `expires_at` (a
    number, which the chapter's printed response lacks), lose a put to each, and call the
    reader's `holder_of` on each response: it must return (owner, expires_at as an int). A
    function that returns fixed values cannot pass: the two claims differ. The expected values
    are never printed, so the answer is read from the response, not from this check."""
    answers, truths = [], []
    for _ in range(2):
        n = next(_EXERCISE_KEYS)
        holder = f"invocation-{hashlib.sha256(str(n).encode()).hexdigest()[:4]}"
        expires = 86_400 + 3_600 * n
        response = lost_put(world, f"charge#exercise#{n}", holder=holder, expires_at=expires)
        try:
            answer = holder_of(response)
        except Exception as error:  # noqa: BLE001 - the reader's code: report it, whatever it is
            return (f"holder_of raised {type(error).__name__}: {error}. Print the response it is given, "
                    "and read it before you pick a value out of it.")
        if unfilled(answer):
            return not_yet("holder_of returns nothing: return the holder's owner and its expires_at, as a pair")
        answers.append(answer)
        truths.append((holder, expires))
    if answers == truths:
        return (f"Right: {answers[0]!r}, then {answers[1]!r}. The loser learns who holds the work, and "
                "until when, without a second request.")
    answer, (holder, expires) = answers[0], truths[0]
    if not isinstance(answer, tuple) or len(answer) != 2:
        return f"Not a pair: got {answer!r}. Return two values, the owner and the expires_at: (owner, expires_at)."
    owner, when = answer
    if owner == {"S": holder} or when == {"N": str(expires)}:
        return (f"Close: {answer!r} still wraps a value in a dict. What is that dict's one key, and "
                "what sits under it?")
    if owner == holder and when == str(expires):
        return (f"Close: the owner is right, but {when!r} is text, and the exercise asks for a whole "
                "number.")
    if owner == seen:
        return (f"That is the holder of the claim printed above ({seen!r}). This response is about "
                "another claim: read the owner from the response you are given.")
    if answers[0] == answers[1]:
        return (f"Not the holder: your function returned {answer!r} for two claims that differ. "
                "Read both values from each response.")
    if owner != holder:
        return f"Not the holder: got {owner!r}. Which part of the response is about the claim that stopped the put?"
    return f"The owner is right, but not its expires_at: got {when!r}. What else does that claim keep?"
