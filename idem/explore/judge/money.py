"""Who pays and how much: each charge a schedule left at the provider, read for its amount, currency
and customer, not only counted (docs/one_charge_per_order.md, "Who pays and how much").

A handler that charges each order once, but the wrong amount or the wrong customer, moves money
wrongly while its books agree with the provider: counting charges sees nothing. So:

- **How much.** The schedules upload the clean run's order file again (a new order id, the same
  price), so every charge moves an amount and currency the clean run's charges moved. Another is a
  silent mismatch: the price of one order depends on which delivery charged it. What the clean run
  charged is set against the order file's own `amount_cents` and `currency` (the check's says 1250
  usd) in the report (`file_note`): the check cannot know a handler's pricing rule (a fixed fee, a
  tax), so a clean run charging another price than the file's is said, not judged.
- **Who pays.** Where the check linked a customer to each account it uploaded under (the function
  names the mapping: `idem.explore.families.accounts`) and the clean run charged the customer linked
  to its upload's account (`by_link`: the function pays by the mapping, not by a rule of its own),
  every charge goes to the customer linked to the account of one of the schedule's uploads, and no
  customer is charged more often than the clean run charges per upload times its account's uploads.
  More is a double charge (that customer pays for another's order); a customer linked to none of
  them is a silent mismatch.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..families import accounts
from .verdicts import BREAKS, Verdict


@dataclass(frozen=True)
class Price:
    """What an order file says its charge moves."""

    cents: int
    currency: str | None  # None: the file names no currency (the handler's own default applies)

    def allows(self, cents: Any, currency: Any) -> bool:
        return (cents == self.cents and not isinstance(cents, bool)
                and (self.currency is None or str(currency).lower() == self.currency.lower()))

    def __str__(self) -> str:
        return f"{self.cents} {self.currency}" if self.currency else str(self.cents)


def price_of(body: bytes | None) -> Price | None:
    """The price an order file states (JSON with an integer `amount_cents`, and a `currency` if it
    names one), or None when it states none: such a file's charges are not judged on the amount."""
    try:
        order = json.loads(body or b"")
    except ValueError:
        return None
    if not isinstance(order, dict):
        return None
    cents, currency = order.get("amount_cents"), order.get("currency")
    if not isinstance(cents, int) or isinstance(cents, bool):
        return None
    return Price(cents, currency if isinstance(currency, str) and currency else None)


def prices_of(bodies: Iterable[bytes | None]) -> list[Price] | None:
    """The prices the schedule's order files state, or None if one of them states none."""
    prices = [price_of(body) for body in bodies]
    return None if any(p is None for p in prices) else [p for p in prices if p is not None]


def prices_paid(charges: Sequence[Mapping[str, Any]]) -> list[tuple[Any, Any]]:
    """Each charge's (amount, currency), as a result keeps them."""
    return [(charge.get("amount"), charge.get("currency")) for charge in charges]


def by_link(charges: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> bool:
    """Did every charge go to the customer the check linked to the account of one of `keys`?"""
    linked = {accounts.customer_for(accounts.account_of(key)) for key in keys}
    return bool(charges) and all(str(charge.get("customer", "")) in linked for charge in charges)


def clean_prices(paid: Sequence[tuple[Any, Any]]) -> list[Price] | None:
    """What the clean run's charges moved, as the prices a schedule's charges are held to (None:
    no charge, or an amount that is no integer: not judged)."""
    prices = [Price(cents, str(currency) if currency else None) for cents, currency in dict.fromkeys(paid)
              if isinstance(cents, int) and not isinstance(cents, bool)]
    return prices if prices and len(prices) == len(dict.fromkeys(paid)) else None


def file_note(paid: Sequence[tuple[Any, Any]], stated: Sequence[Price] | None) -> list[str]:
    """Said in the report when the clean run charged another price than its order file states:
    a handler pricing orders from the file misreads it (a default for a misspelt field); one with a
    rule of its own (a fixed fee) is not judged on it."""
    if not stated or not paid:
        return []
    wrong = [(cents, currency) for cents, currency in dict.fromkeys(paid)
             if not any(price.allows(cents, currency) for price in stated)]
    if not wrong:
        return []
    charged = ", ".join(f"{cents} {currency}" for cents, currency in wrong)
    says = " or ".join(dict.fromkeys(str(p) for p in stated))
    return [f"note: the clean run charged {charged} where the order file says {says}. A handler that prices "
            "orders from the file reads it wrongly (a default for a missing or misspelt field moves the wrong "
            "amount on every order); one with a pricing rule of its own is not judged on the amount. Check "
            "which, or pass --object with an order file your handler reads."]


def judge(charges: Sequence[Mapping[str, Any]], prices: Sequence[Price] | None,
          linked_keys: Sequence[str] | None, per_upload: int) -> tuple[str | None, list[str]]:
    """The verdict the schedule's new charges give on their own (None: none is wrong), and why.
    `prices`: what the clean run's charges moved (None: not judged on the amount). `linked_keys`: the keys
    of the schedule's uploads, when the check linked a customer to each of their accounts (None:
    not judged on who pays). `per_upload`: the clean run's charges per upload (0: no bound, as on
    the clean run itself)."""
    verdict: str | None = None
    findings: list[str] = []
    for charge in charges:
        cents, currency = charge.get("amount"), charge.get("currency")
        if prices and not any(price.allows(cents, currency) for price in prices):
            says = " or ".join(dict.fromkeys(str(p) for p in prices))
            findings.append(f"charged {cents} {currency} where the clean run charged {says} for the same order file")
            verdict = verdict or Verdict.SILENT_MISMATCH.value
    if linked_keys is None:
        return verdict, findings
    uploads_of = Counter(accounts.account_of(key) for key in linked_keys)
    account_of_customer = {accounts.customer_for(account): account for account in uploads_of}
    for customer, times in sorted(Counter(str(c.get("customer", "")) for c in charges).items()):
        account = account_of_customer.get(customer)
        if account is None:
            findings.append(f"charged {customer or 'no customer'}, the customer linked to none of this "
                            f"schedule's accounts ({', '.join(sorted(uploads_of))})")
            verdict = verdict or Verdict.SILENT_MISMATCH.value
        elif per_upload and times > per_upload * uploads_of[account]:
            uploads = uploads_of[account]
            findings.append(f"{customer}, the customer linked to account {account}, was charged {times} times "
                            f"for {uploads} upload{'s' if uploads != 1 else ''} of that account: another "
                            "account's order was charged to it, or its own twice")
            verdict = Verdict.DOUBLE_CHARGE.value
    return verdict, findings


def worse(verdict: str, money: str | None) -> str:
    """The schedule's verdict once its money is weighed: a wrong charge breaks a verdict that
    did not, and a customer charged twice is a double charge whatever else broke."""
    if money is None:
        return verdict
    if verdict in BREAKS and not (money == Verdict.DOUBLE_CHARGE.value and verdict != money):
        return verdict
    return money
