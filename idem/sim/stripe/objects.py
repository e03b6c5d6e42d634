"""Stripe's objects as the loopback serves them: every field Stripe's fixtures have, and one mode's store."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Objects:
    """One mode's objects, by id."""

    customers: dict[str, dict[str, Any]] = field(default_factory=dict)
    payment_methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    intents: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunds: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: intent id -> what search sees of it: (from when, the object then), one entry per change
    indexed: dict[str, list[tuple[float, dict[str, Any]]]] = field(default_factory=dict)


def _public(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as served: without the loopback's own notes (keys starting `_`)."""
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in obj.items() if not k.startswith("_")}


def _customer(customer_id: str, now: float, mode: str, *, email: str | None, name: str | None,
              metadata: dict[str, str], description: str | None) -> dict[str, Any]:
    """A Customer with every field Stripe's fixture has (stripe/openapi fixtures3.json)."""
    return {"id": customer_id, "object": "customer", "address": None, "balance": 0, "created": int(now),
            "currency": None, "default_source": None, "delinquent": False, "description": description,
            "discount": None, "email": email, "invoice_prefix": customer_id[-8:].upper(),
            "invoice_settings": {"custom_fields": None, "default_payment_method": None, "footer": None,
                                 "rendering_options": None},
            "livemode": mode == "live", "metadata": dict(metadata), "name": name, "next_invoice_sequence": 1,
            "phone": None, "preferred_locales": [], "shipping": None, "tax_exempt": "none", "test_clock": None}


def _payment_method(method_id: str, now: float, mode: str, type: str, brand: str, last4: str) -> dict[str, Any]:
    """A PaymentMethod with every field Stripe's fixture has (stripe/openapi fixtures3.json)."""
    method: dict[str, Any] = {
        "id": method_id, "object": "payment_method", "allow_redisplay": "unspecified",
        "billing_details": {"address": None, "email": None, "name": None, "phone": None, "tax_id": None},
        "created": int(now), "customer": None, "customer_account": None, "livemode": mode == "live",
        "metadata": {}, "type": type}
    if type == "card":
        method["card"] = {"brand": brand, "checks": None, "country": "US", "display_brand": brand,
                          "exp_month": 12, "exp_year": 2034, "fingerprint": f"fp{last4}{brand}"[:16],
                          "funding": "credit", "generated_from": None, "last4": last4,
                          "networks": {"available": [brand], "preferred": None},
                          "regulated_status": "unregulated", "three_d_secure_usage": {"supported": True},
                          "wallet": None}
    else:
        method[type] = {"last4": last4, "bank_name": "STRIPE TEST BANK"}
    return method


def _intent(intent_id: str, now: float, mode: str, *, amount: int, currency: str, customer: str | None,
            payment_method: str | None, metadata: dict[str, str], status: str,
            description: str | None) -> dict[str, Any]:
    """A PaymentIntent with every field Stripe's fixture has (stripe/openapi fixtures3.json)."""
    return {"id": intent_id, "object": "payment_intent", "amount": amount, "amount_capturable": 0,
            "amount_details": None, "amount_received": 0, "application": None, "application_fee_amount": None,
            "automatic_payment_methods": None, "canceled_at": None, "cancellation_reason": None,
            "capture_method": "automatic", "client_secret": f"{intent_id}_secret_loopback",
            "confirmation_method": "automatic", "created": int(now), "currency": currency, "customer": customer,
            "customer_account": None, "description": description, "excluded_payment_method_types": None,
            "last_payment_error": None, "latest_charge": None, "livemode": mode == "live",
            "managed_payments": None, "metadata": dict(metadata), "next_action": None, "on_behalf_of": None,
            "payment_method": payment_method, "payment_method_configuration_details": None,
            "payment_method_options": None, "payment_method_types": ["card"], "processing": None,
            "receipt_email": None, "review": None, "setup_future_usage": None, "shipping": None, "source": None,
            "statement_descriptor": None, "statement_descriptor_suffix": None, "status": status,
            "transfer_data": None, "transfer_group": None}


def _refund(refund_id: str, now: float, intent: dict[str, Any], amount: int, metadata: dict[str, str],
            reason: Any) -> dict[str, Any]:
    """A Refund with every field Stripe's fixture has (stripe/openapi fixtures3.json)."""
    return {"id": refund_id, "object": "refund", "amount": amount, "balance_transaction": None,
            "charge": intent["latest_charge"], "created": int(now), "currency": intent["currency"],
            "customer": intent["customer"], "customer_account": None,
            "destination_details": {"type": "card", "card": {"type": "refund"}}, "metadata": dict(metadata),
            "payment_intent": intent["id"], "payment_method": intent["payment_method"],
            "reason": reason, "receipt_number": None, "source_transfer_reversal": None, "status": "succeeded",
            "transfer_reversal": None}
