"""Who pays for an account: the customer mapping, the trusted source the handler to copy reads
(docs/money_contract.md, property 2). One item per account in the ledger table:
`pk` = `account#<ACCOUNT>`, `kind` = `customer`, `account`, `customer` (a Stripe customer id,
`cus_...`), `linked_by` (who linked it: the caller's ARN from STS GetCallerIdentity), `linked_at`
(epoch seconds) and `reason`. Written only here, by the runbook command
`idem customers link ACCOUNT cus_... --reason TEXT`; the charge function may only read it
(template.yaml denies its role every write to `account#*` keys). The item shares its key with
the counters claim-first and robust keep (`charges`, `cents`): a link is an UpdateItem of its own
attributes, which leaves those counters as they are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .dynamo import from_item, to_item, values

#: A Stripe customer id: `cus_` and letters, digits or underscores (https://docs.stripe.com/api/customers/object).
CUSTOMER_ID = re.compile(r"cus_[A-Za-z0-9_]{1,250}")
#: An account is the first folder of an upload's key: S3 keys are at most 1,024 bytes; no slash in it.
ACCOUNT_NAME = re.compile(r"[^/\x00-\x1f]{1,200}")


class CustomerError(Exception):
    """Bad input for a link: one line for the person, exit code 2; nothing was written."""


@dataclass(frozen=True)
class Link:
    account: str
    customer: str
    linked_by: str = ""
    linked_at: float = 0.0
    reason: str = ""

    def render(self) -> str:
        return (f"account {self.account} -> customer {self.customer} (linked by {self.linked_by or '?'} at "
                f"{int(self.linked_at)}: {self.reason or 'no reason given'})")


def mapping_key(account: str) -> str:
    return f"account#{account}"


def link(dynamodb: Any, table: str, account: str, customer: str, *, reason: str, caller: str,
         now: float) -> Link:
    """Link `account` to the Stripe customer `customer`, saying who (`caller`) and why. A relink
    replaces the customer for later orders; orders charged already stay charged to the old one."""
    if not ACCOUNT_NAME.fullmatch(account):
        raise CustomerError(f"the account {account[:80]!r} is not the first folder of an upload's key "
                            "(no slash, no control character, at most 200 characters)")
    if not CUSTOMER_ID.fullmatch(customer):
        raise CustomerError(f"{customer[:80]!r} is not a Stripe customer id (cus_ and letters, digits or underscores)")
    if not reason.strip():
        raise CustomerError("say why with --reason (an onboarding ticket, a request): it is kept with the link")
    made = Link(account, customer, caller, float(now), reason.strip()[:500])
    dynamodb.update_item(
        TableName=table, Key=to_item({"pk": mapping_key(account)}),
        UpdateExpression="SET #k = :kind, #a = :account, #c = :customer, linked_by = :by, linked_at = :at, "
                         "#r = :reason",
        ExpressionAttributeNames={"#k": "kind", "#a": "account", "#c": "customer", "#r": "reason"},
        ExpressionAttributeValues=values(kind="customer", account=account, customer=customer, by=caller,
                                         at=made.linked_at, reason=made.reason))
    return made


def show(dynamodb: Any, table: str, account: str) -> Link | None:
    """The account's link, read as the handler reads it (a strongly consistent GetItem), or None."""
    item = dynamodb.get_item(TableName=table, Key=to_item({"pk": mapping_key(account)}),
                             ConsistentRead=True).get("Item")
    plain = from_item(item) if item else {}
    if plain.get("kind") != "customer" or not plain.get("customer"):
        return None
    return Link(account, str(plain["customer"]), str(plain.get("linked_by", "")),
                float(plain.get("linked_at", 0)), str(plain.get("reason", "")))


def caller_arn(sts: Any) -> str:
    """Who is linking: the ARN STS says the caller is (GetCallerIdentity needs no permission,
    https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html)."""
    return str(sts.get_caller_identity()["Arn"])
