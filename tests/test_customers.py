"""Who pays for an account (idem.core.customers, `idem customers`): the trusted source the
handler to copy reads (docs/money_contract.md, property 2)."""
from __future__ import annotations

import pytest

from idem.cli import _parser
from idem.core import customers
from idem.sim.world import LocalWorld


@pytest.fixture
def world():
    with LocalWorld(link_customers=False) as w:
        yield w


def link(world, account="alice", customer="cus_alice", reason="ticket T-1"):
    return customers.link(world.dynamodb, world.ledger_table, account, customer, reason=reason,
                          caller="arn:aws:sts::123456789012:assumed-role/ops/jane", now=1767225600.0)


def test_a_link_records_who_linked_it_and_why_and_is_read_as_the_handler_reads_it(world):
    assert customers.show(world.dynamodb, world.ledger_table, "alice") is None
    link(world)
    shown = customers.show(world.dynamodb, world.ledger_table, "alice")
    assert shown == customers.Link("alice", "cus_alice", "arn:aws:sts::123456789012:assumed-role/ops/jane",
                                   1767225600.0, "ticket T-1")
    from idem.core.handlers import keyed
    assert keyed.KeyedLedger(world.dynamodb, world.ledger_table).customer_of("alice") == "cus_alice"


@pytest.mark.parametrize("account, customer, reason, says", [
    ("alice", "alice", "r", "not a Stripe customer id"),
    ("alice", "cus_x'y", "r", "not a Stripe customer id"),
    ("al/ice", "cus_alice", "r", "first folder"),
    ("alice", "cus_alice", "  ", "--reason"),
])
def test_a_bad_link_is_refused_with_one_line_and_writes_nothing(world, account, customer, reason, says):
    with pytest.raises(customers.CustomerError, match=says):
        link(world, account, customer, reason)
    assert world.dynamodb.scan(TableName=world.ledger_table)["Items"] == []


def test_a_link_leaves_the_other_patterns_counters_under_the_same_key(world):
    world.dynamodb.update_item(TableName=world.ledger_table, Key={"pk": {"S": "account#alice"}},
                               UpdateExpression="ADD charges :one, cents :c",
                               ExpressionAttributeValues={":one": {"N": "1"}, ":c": {"N": "500"}})
    link(world)
    item = world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "account#alice"}})["Item"]
    assert item["charges"] == {"N": "1"} and item["customer"] == {"S": "cus_alice"}


def test_the_customers_command_is_registered_with_link_and_show():
    parser = _parser()
    args = parser.parse_args(["customers", "link", "alice", "cus_alice", "--reason", "onboarding", "--stack", "s"])
    assert (args.verb, args.account, args.customer, args.reason, args.yes) == ("link", "alice", "cus_alice",
                                                                                "onboarding", False)
    assert parser.parse_args(["customers", "show", "alice", "--stack", "s"]).verb == "show"
