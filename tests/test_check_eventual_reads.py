"""DynamoDB's eventually consistent reads (idem.sim.platform.eventual_reads): a read without ConsistentRead, or
of a global secondary index, may miss a write completed within the last second; a strongly consistent read,
a condition and the check's own reads never do.

The property, from DynamoDB's page (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/
HowItWorks.ReadConsistency.html): an eventually consistent read "may not reflect the results of a recently
completed write operation", and never shows a write that did not succeed; a strongly consistent read returns
"the most up-to-date data, reflecting the updates from all prior write operations that were successful".
"""
from __future__ import annotations

from pathlib import Path

import pytest

from check_cli import HANDLERS, cli

TEMPLATE = str(Path(__file__).parent / "templates" / "eventual_reads.yaml")
TABLE = "eventual-reads-test"


# -- the window --------------------------------------------------------------------------------------
def test_a_read_sees_the_table_before_the_first_write_of_its_last_second_its_end_included():
    from idem.sim.platform.eventual_reads import WINDOW, as_it_was

    writes = [(100.0, "before a"), (100.5, "before b"), (101.2, "before c")]
    assert WINDOW == 1.0
    assert as_it_was(writes, 101.0) == (100.0, "before a")  # a, 1 s old: its end included
    assert as_it_was(writes, 101.25) == (100.5, "before b")  # a is older than a second: seen
    assert as_it_was(writes, 102.3) is None  # every write older than a second: the latest items
    assert as_it_was([], 5.0) is None


# -- on moto, inside a run's watch -------------------------------------------------------------------
@pytest.fixture()
def watched():
    """A world with a table keyed by pk and a global secondary index on order_ref, and a watched
    invocation on a virtual clock (what a run of `idem check` gives the function's calls)."""
    from idem.core.clock import VirtualClock
    from idem.sim.boundary import Visit, Watch, current
    from idem.sim.platform import eventual_reads
    from idem.sim.runtime.thread_waits import own_time
    from idem.sim.world import LocalWorld

    eventual_reads.install(current, own_time)
    with LocalWorld(prefix="eventual") as world:
        world.dynamodb.create_table(
            TableName=TABLE, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "order_ref", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[{"IndexName": "by_order", "Projection": {"ProjectionType": "ALL"},
                                     "KeySchema": [{"AttributeName": "order_ref", "KeyType": "HASH"}]}])
        world.dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "old"}, "order_ref": {"S": "o-0"}})  # the check's
        clock = VirtualClock()
        with Watch(clock=clock).visiting(Visit(1, 1, "w")):
            yield world.dynamodb, clock
        world.dynamodb.delete_table(TableName=TABLE)


def get(dynamodb, pk: str, **extra):
    return dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": pk}}, **extra).get("Item")


def test_an_eventually_consistent_get_misses_a_write_for_one_second_and_a_consistent_one_never(watched):
    dynamodb, clock = watched
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "claim"}, "order_ref": {"S": "o-1"}})
    assert get(dynamodb, "claim") is None  # read right after the write: DynamoDB may not reflect it
    assert get(dynamodb, "claim", ConsistentRead=True) is not None
    assert get(dynamodb, "old") is not None  # written before the run (the check's own): seen
    clock.advance(1.0)
    assert get(dynamodb, "claim") is None  # a second later, the end of the window included
    clock.advance(0.01)
    assert get(dynamodb, "claim") is not None


def test_an_update_is_missed_whole_and_a_condition_is_judged_on_the_latest_item(watched):
    dynamodb, clock = watched
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "claim"}, "status": {"S": "in_progress"}})
    clock.advance(5.0)
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": "claim"}}, UpdateExpression="SET #s = :d, charge_id = :c",
                         ExpressionAttributeNames={"#s": "status"},
                         ExpressionAttributeValues={":d": {"S": "done"}, ":c": {"S": "ch_1"}})
    stale = get(dynamodb, "claim")
    assert stale == {"pk": {"S": "claim"}, "status": {"S": "in_progress"}}  # moto's in-place update not seen
    assert get(dynamodb, "claim", ConsistentRead=True)["status"] == {"S": "done"}
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):  # the latest item, not the stale one
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "claim"}}, ConditionExpression="#s <> :d",
                          ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":d": {"S": "done"}})
    clock.advance(1.5)
    assert get(dynamodb, "claim")["charge_id"] == {"S": "ch_1"}


def test_a_refused_write_is_never_missed_and_never_seen(watched):
    dynamodb, clock = watched
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "claim"}, "n": {"N": "1"}})
    clock.advance(5.0)
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "claim"}, "n": {"N": "2"}},
                          ConditionExpression="attribute_not_exists(pk)")
    assert get(dynamodb, "claim")["n"] == {"N": "1"}  # the refusal changed nothing: nothing to miss


def test_query_scan_and_batch_get_read_as_dynamodb_may(watched):
    dynamodb, clock = watched
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "claim"}, "order_ref": {"S": "o-1"}})

    def by_order(**extra):
        return dynamodb.query(TableName=TABLE, IndexName="by_order", KeyConditionExpression="order_ref = :o",
                              ExpressionAttributeValues={":o": {"S": "o-1"}}, **extra)["Items"]

    assert by_order() == []  # a global secondary index: always eventually consistent
    base = {"TableName": TABLE, "KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "claim"}}}
    assert dynamodb.query(**base)["Items"] == []
    assert len(dynamodb.query(**base, ConsistentRead=True)["Items"]) == 1
    assert {i["pk"]["S"] for i in dynamodb.scan(TableName=TABLE)["Items"]} == {"old"}
    assert {i["pk"]["S"] for i in dynamodb.scan(TableName=TABLE, ConsistentRead=True)["Items"]} == {"old", "claim"}
    keys = {"Keys": [{"pk": {"S": "claim"}}, {"pk": {"S": "old"}}]}
    eventual = dynamodb.batch_get_item(RequestItems={TABLE: keys})["Responses"][TABLE]
    consistent = dynamodb.batch_get_item(RequestItems={TABLE: {**keys, "ConsistentRead": True}})["Responses"][TABLE]
    assert [i["pk"]["S"] for i in eventual] == ["old"] and len(consistent) == 2
    selected = dynamodb.execute_statement(Statement=f'SELECT * FROM "{TABLE}" WHERE pk = ?',
                                          Parameters=[{"S": "claim"}])["Items"]
    assert selected == []
    clock.advance(2.0)
    assert len(by_order()) == 1


def test_outside_a_run_every_read_sees_the_latest_items():
    from idem.sim.world import LocalWorld

    with LocalWorld(prefix="eventual-out") as world:
        world.dynamodb.put_item(TableName=world.ledger_table, Item={"pk": {"S": "mine"}})
        assert world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "mine"}}).get("Item")


# -- handlers written as teams write them ------------------------------------------------------------
def test_a_claim_found_through_a_global_secondary_index_breaks_even_one_at_a_time(monkeypatch):
    # gsi_claim_serial: serial_uuid_claim with its claims found through an index; the copy throttled while the
    # first ran, tried again a second later, finds none and charges under a new UUID (it held before the check
    # read as DynamoDB may)
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    code, out, err = cli("--template", TEMPLATE, "--function", "GsiClaim", "--retries", "0", "--workers", "1")
    assert code == 1 and "double_charge" in out, (out + err)[-3000:]
    assert "after dynamodb:Query  (read eventually consistent: " in out, out[-3000:]


def test_the_same_claim_read_with_consistent_read_holds_one_at_a_time(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    code, out, err = cli("--template", TEMPLATE, "--function", "Serial", "--retries", "0", "--workers", "1")
    assert code == 0 and "ReservedConcurrentExecutions 1" in out, (out + err)[-3000:]


def test_the_clean_run_reads_the_latest_items_and_a_schedule_reads_as_dynamodb_may(monkeypatch):
    # readback_owner_token reads its own claim back without ConsistentRead: on the clean run (the path every
    # schedule is measured against) it sees it and charges; in a schedule the read may miss it, and the order
    # is skipped for good. Before, the clean run read stale too, and the check stopped: "made no charge".
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    code, out, err = cli(str(HANDLERS / "readback_owner_token.py") + ":lambda_handler", "--retries", "0",
                         "--workers", "1")
    assert code == 1 and "silent_loss" in out and "made no charge" not in out + err, (out + err)[-3000:]
    assert "schedule: no fault; single; 0 retries" in out, out[-3000:]
    assert "after dynamodb:GetItem #2  (read eventually consistent: " in out, out[-3000:]


def test_fresh_reads_see_the_latest_items_inside_a_run(watched):
    from idem.sim.platform.eventual_reads import fresh

    dynamodb, _ = watched
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "claim"}})
    with fresh():
        assert get(dynamodb, "claim") is not None
    assert get(dynamodb, "claim") is None
