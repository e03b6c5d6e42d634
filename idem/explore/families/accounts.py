"""Accounts in `idem check`: another account's order with the same order id, and who pays for each.

An account is the first folder of an upload's key (`alice/order.json` -> `alice`). Two accounts'
orders with the same `order_id` are two orders: a handler that keys by the bucket and the order id
alone answers the second as the first's duplicate, and that order is never charged (a silent loss).
The `accounts` family (`idem.explore.families.timed`) uploads, beside the schedule's own order, the same bytes
under another account's folder, after the first is done or while its invocation sits at a boundary;
each order is judged on its own money (docs/one_charge_per_order.md).

Who pays is read from a mapping the uploader cannot write: one item per account in the ledger table,
`pk` = `account#<ACCOUNT>`, `kind` "customer", `account`, `customer`, `linked_by`, `linked_at`,
`reason` (written in production by `idem customers link`). A function whose code reads that mapping
(its folder's Python files name `account#`) finds one linked customer for every account the check
uploads under, written before the upload as the runbook would have written it. Over the loopback
Stripe (`--provider stripe`) that customer exists there, with a saved default card: the runbook links
a customer that exists. Other functions find nothing added to their table.
"""
from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import Any, Callable

#: the prefix of a customer mapping's partition key (docs/money_contract.md, property 2)
MAPPING_PREFIX = "account#"
#: who the check says linked each account (STS GetCallerIdentity's ARN, as `idem customers link` writes)
LINKED_BY = "arn:aws:sts::123456789012:assumed-role/idem-check/runbook"


def account_of(key: str) -> str:
    """The account an upload belongs to: the first folder of its key."""
    return key.split("/", 1)[0] if "/" in key.strip("/") else "unassigned"


def other_account_key(key: str, number: int) -> str:
    """The same file name under another account's folder (bob's, beside alice's): the key's first
    folder after the trigger's prefix (`uploads.KEY_PREFIX`) is the account's, so the trigger's
    filter accepts the other account's upload as it accepts the first
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-filtering.html):
    `incoming/check00042/a.json` -> `incoming/other00042/a.json`."""
    from ..run.uploads import KEY_PREFIX

    prefix = KEY_PREFIX if key.startswith(KEY_PREFIX) else ""
    return f"{prefix}other{number:05d}/{key[len(prefix):].split('/', 1)[-1]}"


def customer_for(account: str) -> str:
    """The customer the check links to `account` (a Stripe-shaped id)."""
    return "cus_" + "".join(c for c in account if c.isalnum())[:40]


@functools.lru_cache(maxsize=64)
def reads_mapping(module: str) -> bool:
    """Does the function's code read the customer mapping? Its module, or a module of its folder it
    imports by its plain name (and so on: the handler to copy's siblings), names `account#`."""
    if module.endswith(".py"):
        origin: str | None = module
    else:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return False
        origin = spec.origin if spec else None
    if not origin or not origin.endswith(".py"):
        return False
    folder, todo, seen = Path(origin).parent, [Path(origin)], set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        source = path.read_text(encoding="utf-8", errors="ignore")
        if MAPPING_PREFIX in source:
            return True
        todo += [folder / f"{name}.py" for name in re.findall(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", source, re.M)]
    return False


def linker(world: Any, table: str | None, module: str,
           customer_made: Callable[[str], Any] | None = None) -> Callable[[str], None]:
    """What links an upload's account to a customer before its event is sent: a mapping item in
    `table` (once per account) when the function reads the mapping, else nothing. `customer_made`:
    called with each customer first linked, to make it where the function charges it (the loopback
    Stripe: a customer with a saved default card, as the runbook links a customer that exists)."""
    if not table or not reads_mapping(module):
        return lambda key: None
    linked: set[str] = set()

    def link(key: str) -> None:
        account = account_of(key)
        if account in linked:
            return
        linked.add(account)
        if customer_made is not None:
            customer_made(customer_for(account))
        put = getattr(world, "put_in_backend", None) or (lambda t, item: world.dynamodb.put_item(TableName=t, Item=item))
        put(table, {
            "pk": {"S": MAPPING_PREFIX + account}, "kind": {"S": "customer"}, "account": {"S": account},
            "customer": {"S": customer_for(account)}, "linked_by": {"S": LINKED_BY},
            "linked_at": {"N": str(int(world.clock.now()) - 86_400)},
            "reason": {"S": "linked by idem check for its schedules"}})  # the operator's write, not the function's
    return link
