"""Customers and their saved PaymentMethods (part of `StripeAccount`): created, attached, set as the
default, and looked up with Stripe's missing-object errors; the test PaymentMethods of test mode."""
from __future__ import annotations

import re
import threading
from typing import Any

from .errors import StripeError, _missing
from .objects import Objects, _customer, _payment_method, _public

#: Test PaymentMethods: in test mode each names a card with a known behaviour
#: (https://docs.stripe.com/testing#cards, #declined-payments, #authentication-and-setup).
#: Value: (brand, last4, what a charge does). They exist in test mode only.
TEST_PAYMENT_METHODS: dict[str, tuple[str, str, str]] = {
    "pm_card_visa": ("visa", "4242", "succeeds"),
    "pm_card_mastercard": ("mastercard", "4444", "succeeds"),
    "pm_card_visa_chargeDeclined": ("visa", "0002", "card_declined/generic_decline"),
    "pm_card_chargeDeclined": ("visa", "0002", "card_declined/generic_decline"),
    "pm_card_chargeDeclinedInsufficientFunds": ("visa", "9995", "card_declined/insufficient_funds"),
    "pm_card_chargeDeclinedExpiredCard": ("visa", "0069", "expired_card/expired_card"),
    # 3D Secure required on every payment: off-session, a decline with authentication_required.
    "pm_card_authenticationRequired": ("visa", "3184", "authentication_required"),
    "pm_card_threeDSecure2Required": ("visa", "3220", "authentication_required"),
}


class CustomersAndPaymentMethods:
    """`StripeAccount`'s customers and PaymentMethods."""

    modes: dict[str, Objects]
    _lock: threading.RLock

    def create_customer(self, mode: str, *, email: str | None = None, name: str | None = None,
                        metadata: dict[str, str] | None = None, description: str | None = None,
                        customer_id: str | None = None) -> dict[str, Any]:
        """A customer (https://docs.stripe.com/api/customers/create); `customer_id` chosen by a test."""
        if customer_id is not None and not re.fullmatch(r"cus_\w+", customer_id):
            raise ValueError(f"a customer id is cus_ and letters, digits or underscores, not {customer_id!r}")
        with self._lock:
            if customer_id in self.modes[mode].customers:
                raise ValueError(f"customer {customer_id} exists already in {mode} mode")
            customer = _customer(customer_id or self._new_id("cus"), self.now(), mode, email=email, name=name,
                                 metadata=metadata or {}, description=description)
            self.modes[mode].customers[customer["id"]] = customer
            return dict(customer)

    def create_payment_method(self, mode: str, *, brand: str = "visa", last4: str = "4242",
                              behaviour: str = "succeeds", type: str = "card") -> dict[str, Any]:
        """A PaymentMethod, as a customer's card collected on-session (SetupIntent, Elements) leaves
        one. `behaviour`: what charging it does ("succeeds", "card_declined/<decline_code>",
        "authentication_required", "processing": a bank debit whose result comes later)."""
        with self._lock:
            method = _payment_method(self._new_id("pm"), self.now(), mode, type, brand, last4)
            method["_behaviour"], method["_seq"] = behaviour, self._next_seq()
            self.modes[mode].payment_methods[method["id"]] = method
            return _public(method)

    def attach(self, mode: str, payment_method: str, customer: str) -> dict[str, Any]:
        """Attach a PaymentMethod to a customer (https://docs.stripe.com/api/payment_methods/attach).
        A test PaymentMethod (`pm_card_visa`) makes a new PaymentMethod each time it is used."""
        with self._lock:
            self._customer(mode, customer, param="customer")
            method = self._payment_method(mode, payment_method)
            if method.get("customer") not in (None, customer):  # already another customer's
                raise StripeError(400, "invalid_request_error",
                                  "The payment method you provided has already been attached to a customer.",
                                  code="payment_method_unexpected_state", param="payment_method")
            if payment_method in TEST_PAYMENT_METHODS:
                method = dict(method, id=self._new_id("pm"), created=int(self.now()), _seq=self._next_seq())
                self.modes[mode].payment_methods[method["id"]] = method
            method["customer"] = customer
            return _public(method)

    def _update_customer(self, mode: str, customer_id: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            customer = self._customer(mode, customer_id, param="id")
            default = (params.get("invoice_settings") or {}).get("default_payment_method")
            if default:
                method = self._payment_method(mode, default, param="invoice_settings[default_payment_method]")
                if method.get("customer") != customer_id:
                    # https://docs.stripe.com/api/customers/update#update_customer-invoice_settings-default_payment_method:
                    # "ID of a payment method that's attached to the customer"
                    raise StripeError(400, "invalid_request_error",
                                      f"The customer does not have a payment method with the ID {default}. The "
                                      "payment method must be attached to the customer.",
                                      param="invoice_settings[default_payment_method]")
                customer["invoice_settings"]["default_payment_method"] = default
            customer["metadata"].update(params.get("metadata") or {})
            for name in ("email", "name", "description"):
                if name in params:
                    customer[name] = params[name]
            return dict(customer)

    def _customer(self, mode: str, customer_id: str, param: str) -> dict[str, Any]:
        found = self.modes[mode].customers.get(customer_id)
        if found is None:
            raise _missing("customer", customer_id, param, self._other_mode_has(mode, "customers", customer_id))
        return found

    def _payment_method(self, mode: str, method_id: str, param: str = "payment_method") -> dict[str, Any]:
        found = self.modes[mode].payment_methods.get(method_id)
        if found is None and method_id in TEST_PAYMENT_METHODS and mode == "test":
            brand, last4, behaviour = TEST_PAYMENT_METHODS[method_id]
            found = _payment_method(method_id, self.now(), mode, "card", brand, last4)
            found["_behaviour"], found["_seq"] = behaviour, self._next_seq()
            self.modes[mode].payment_methods[method_id] = found
        if found is None:
            elsewhere = self._other_mode_has(mode, "payment_methods", method_id) or \
                ("test" if mode == "live" and method_id in TEST_PAYMENT_METHODS else None)
            raise _missing("PaymentMethod", method_id, param, elsewhere)
        return found
