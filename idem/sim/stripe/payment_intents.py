"""PaymentIntents and their refunds (part of `StripeAccount`): created and confirmed in one call, the
money moved once through the provider stand-in, a processing one settled later, refunds."""
from __future__ import annotations

import threading
from typing import Any

from ...core.errors import CardDeclined, ProviderError
from ...core.provider import MINIMUM_AMOUNTS, Provider
from .customers import TEST_PAYMENT_METHODS
from .errors import FAULTS, Answer, Fault, StripeError, _missing
from .objects import Objects, _intent, _public, _refund
from .params import _boolean, _integer, _metadata, _required, _stand_in_request


#: capture_method: "automatic", "automatic_async" or "manual" (https://docs.stripe.com/api/payment_intents/create)
CAPTURE_METHODS = ("automatic", "automatic_async", "manual")


class PaymentIntentsAndRefunds:
    """`StripeAccount`'s PaymentIntents and refunds."""

    provider: Provider
    modes: dict[str, Objects]
    failed: set[str]
    search_lag_seconds: float
    _lock: threading.RLock

    def _create_intent(self, mode: str, params: dict[str, Any], key: str, fault: Fault | None) -> Answer:
        """Create and confirm a PaymentIntent (https://docs.stripe.com/api/payment_intents/create).
        Validation first: nothing of a refused request is saved."""
        amount = _integer(params, "amount")
        if amount < 1:  # "A positive integer representing how much to charge in the smallest currency unit"
            raise StripeError(400, "invalid_request_error", "This value must be greater than or equal to 1.",
                              code="parameter_invalid_integer", param="amount")
        currency = str(_required(params, "currency")).lower()
        if amount < MINIMUM_AMOUNTS.get(currency, 1):
            # Under the currency's minimum charge
            # (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts): a request error with the
            # code amount_too_small, refused before execution, so nothing is saved for the key.
            raise StripeError(400, "invalid_request_error", f"Amount must be at least {MINIMUM_AMOUNTS[currency]} "
                              f"{currency} in its smallest unit.", code="amount_too_small", param="amount")
        metadata = _metadata(params.get("metadata"))
        confirm, off_session = _boolean(params, "confirm"), _boolean(params, "off_session")
        capture_method = str(params.get("capture_method") or "automatic")
        if capture_method not in CAPTURE_METHODS:
            raise StripeError(400, "invalid_request_error", f"Invalid capture_method: must be one of "
                              f"{', '.join(CAPTURE_METHODS)}", param="capture_method")
        if off_session and not confirm:
            # off_session: "This parameter can only be used with confirm=true."
            raise StripeError(400, "invalid_request_error",
                              "You can only pass `off_session` when `confirm` is true.", param="off_session")
        customer_id = params.get("customer")
        method_id = params.get("payment_method")
        with self._lock:
            if customer_id:
                self._customer(mode, customer_id, param="customer")
            method = self._payment_method(mode, method_id, param="payment_method") if method_id else None
            if method is not None and customer_id and method.get("customer") != customer_id \
                    and method_id not in TEST_PAYMENT_METHODS:
                # A customer is charged with a method saved to that customer (attach it first:
                # https://docs.stripe.com/payments/save-and-reuse). Stripe's message, as reported in
                # https://github.com/flutter-stripe/flutter_stripe/issues/379 (paymentIntents.create).
                raise StripeError(400, "invalid_request_error",
                                  f"The customer does not have a payment method with the ID {method_id}. "
                                  "The payment method must be attached to the customer.", param="payment_method")
            if method is not None and method.get("customer") is None and method.get("_used") \
                    and method_id not in TEST_PAYMENT_METHODS:
                # A method never attached to a customer is good for one payment (Stripe's message, as
                # reported in https://github.com/stripe/stripe-react-native/issues/1170).
                raise StripeError(400, "invalid_request_error", (
                    "The provided PaymentMethod was previously used with a PaymentIntent without Customer "
                    "attachment, shared with a connected account without Customer attachment, or was detached "
                    "from a Customer. It may not be used again. To use a PaymentMethod multiple times, you must "
                    "attach it to a Customer first."), param="payment_method")
            if confirm and method is None:
                raise StripeError(400, "invalid_request_error", (
                    "You cannot confirm this PaymentIntent because it's missing a payment method. Update the "
                    "PaymentIntent with a payment method and then confirm it again."),
                    code="payment_intent_unexpected_state")
        if method is not None and confirm:
            method["_used"] = True
        behaviour = _behaviour(method, fault, off_session) if confirm else "requires_confirmation"
        if fault is not None and fault.name == "api_error":
            behaviour = "succeeds"  # a 500 after execution began: the money moved, the caller never heard
        # The money, once: the stand-in records the charge, and the key's answer (a decline, or any
        # answer that moves no money, as its "declined"); its rules agree with these (same clock, same
        # retention), so it executes exactly when this layer does.
        moves = behaviour in ("succeeds", "processing")
        charge_id = None
        try:
            made = self.provider.charge(**_stand_in_request(mode, params, key), outcome="ok" if moves else "declined")
            charge_id = made.id if moves else None
        except CardDeclined:
            pass
        except ProviderError as refused:  # the stand-in's own refusal: not Stripe's, and not saved
            raise StripeError(refused.http_status, "api_error", str(refused)) from refused
        status = {"succeeds": "succeeded", "processing": "processing", "requires_action": "requires_action",
                  "requires_confirmation": "requires_confirmation"}.get(behaviour, "requires_payment_method")
        with self._lock:
            intent_id = "pi_" + charge_id.removeprefix("ch_") if charge_id else self._new_id("pi")
            held = status == "succeeded" and capture_method == "manual"
            intent = _intent(intent_id, self.now(), mode, amount=amount, currency=currency, customer=customer_id,
                             payment_method=method["id"] if method else None, metadata=metadata,
                             status="requires_capture" if held else status, description=params.get("description"))
            intent["capture_method"] = capture_method
            if moves:
                intent["latest_charge"] = "ch_" + intent_id.removeprefix("pi_")
                intent["amount_received"] = amount if status == "succeeded" and not held else 0
                # manual capture: authorized, held on the card, nothing collected until captured
                # (https://docs.stripe.com/payments/place-a-hold-on-a-payment-method)
                intent["amount_capturable"] = amount if held else 0
            if status == "requires_action":
                intent["next_action"] = {"type": "use_stripe_sdk", "use_stripe_sdk": {}}
            declined = FAULTS.get(behaviour.split("/")[0])
            if declined is not None and declined.status == 402:
                decline_code = behaviour.split("/")[1] if "/" in behaviour else declined.decline_code
                error = {"type": "card_error", "code": declined.code, "decline_code": decline_code,
                         "message": declined.message, "payment_method": _public(method) if method else None}
                intent["last_payment_error"] = error
                intent["payment_method"] = None  # a failed payment detaches the method from the intent
            intent["_seq"] = self._next_seq()
            self.modes[mode].intents[intent_id] = intent
            public = _public(intent)
            self._index(mode, public)
        if declined is not None and declined.status == 402:
            # A decline is a 402 card_error carrying the PaymentIntent, now requires_payment_method
            # (https://docs.stripe.com/api/errors: payment_intent, "The PaymentIntent object for errors
            # returned on a request involving a PaymentIntent"); saved like any answer.
            raise StripeError(402, "card_error", declined.message, code=declined.code,
                              decline_code=intent["last_payment_error"]["decline_code"],
                              payment_intent=public, saved=True)
        return Answer(200, public)

    def settle(self, intent_id: str, succeeded: bool, mode: str = "test") -> dict[str, Any]:
        """A `processing` PaymentIntent's result arrives: succeeded, or back to requires_payment_method.
        "the PaymentIntent moves to processing for asynchronous payment methods, such as bank debits.
        These types of payment methods can take up to a few days to process"; a failed attempt leaves
        it requires_payment_method, "until a payment method is attached"
        (https://docs.stripe.com/payments/paymentintents/lifecycle)."""
        with self._lock:
            intent = self._intent(mode, intent_id)
            if intent["status"] != "processing":
                raise ValueError(f"{intent_id} is {intent['status']}, not processing")
            if succeeded:
                intent.update(status="succeeded", amount_received=intent["amount"])
            else:
                intent.update(status="requires_payment_method", latest_charge=intent["latest_charge"],
                              last_payment_error={"type": "card_error", "code": "payment_method_provider_decline",
                                                  "message": "The payment failed."})
                self.failed.add(intent_id)
                self.provider.fail("ch_" + intent_id.removeprefix("pi_"))  # the stand-in: no money moved
            public = _public(intent)
            self._index(mode, public)
            return public

    def _capture(self, mode: str, intent_id: str, params: dict[str, Any]) -> dict[str, Any]:
        """Capture a held PaymentIntent (https://docs.stripe.com/api/payment_intents/capture): "Capture
        the funds of an existing uncaptured PaymentIntent when its status is requires_capture";
        `amount_to_capture` at most `amount_capturable` (all of it by default). Its key replays the
        answer, as every POST's does (the idempotency layer)."""
        with self._lock:
            intent = self._intent(mode, intent_id, param="intent")
            if intent["status"] != "requires_capture":
                raise StripeError(400, "invalid_request_error", (
                    f"This PaymentIntent could not be captured because it has a status of {intent['status']}. "
                    "Only a PaymentIntent with one of the following statuses may be captured: requires_capture."),
                    code="payment_intent_unexpected_state")
            capturable = intent["amount_capturable"]
            amount = _integer(params, "amount_to_capture") if "amount_to_capture" in params else capturable
            if not 1 <= amount <= capturable:
                raise StripeError(400, "invalid_request_error",
                                  f"The amount to capture ({amount}) must be between 1 and {capturable}.",
                                  code="amount_too_large" if amount > capturable else "parameter_invalid_integer",
                                  param="amount_to_capture")
            intent.update(status="succeeded", amount_received=amount, amount_capturable=0)
            public = _public(intent)
            self._index(mode, public)
            return public

    def _index(self, mode: str, intent: dict[str, Any]) -> None:
        """Search sees this version of the PaymentIntent once `search_lag_seconds` have passed."""
        self.modes[mode].indexed.setdefault(intent["id"], []).append((self.now() + self.search_lag_seconds, intent))

    def _refund(self, mode: str, params: dict[str, Any]) -> dict[str, Any]:
        """Refund a PaymentIntent's charge (https://docs.stripe.com/api/refunds/create): all of what is
        left unless `amount` says less."""
        intent_id = params.get("payment_intent")
        if not intent_id and not params.get("charge"):
            raise StripeError(400, "invalid_request_error", "One of `charge` or `payment_intent` is required.")
        with self._lock:
            if not intent_id:
                intent_id = "pi_" + str(params["charge"]).removeprefix("ch_")
            intent = self._intent(mode, intent_id, param="payment_intent")
            if intent["status"] != "succeeded":
                raise StripeError(400, "invalid_request_error",
                                  f"This PaymentIntent ({intent_id}) does not have a successful charge to refund.",
                                  code="charge_not_refundable" if intent["status"] != "processing" else None,
                                  param="payment_intent")
            refunded = sum(r["amount"] for r in self.modes[mode].refunds.values()
                           if r["payment_intent"] == intent_id and r["status"] == "succeeded")
            left = intent["amount_received"] - refunded
            amount = _integer(params, "amount") if "amount" in params else left
            if left <= 0:
                raise StripeError(400, "invalid_request_error",
                                  f"Charge {intent['latest_charge']} has already been refunded.",
                                  code="charge_already_refunded")
            if amount < 1 or amount > left:
                raise StripeError(400, "invalid_request_error",
                                  f"Refund amount ({amount}) is greater than unrefunded amount on charge ({left})",
                                  code="amount_too_large" if amount > left else "parameter_invalid_integer",
                                  param="amount")
            refund = _refund(self._new_id("re"), self.now(), intent, amount, _metadata(params.get("metadata")),
                             params.get("reason"))
            refund["_seq"] = self._next_seq()
            self.modes[mode].refunds[refund["id"]] = refund
            return _public(refund)

    def _intent(self, mode: str, intent_id: str, param: str = "intent") -> dict[str, Any]:
        found = self.modes[mode].intents.get(intent_id)
        if found is None:
            raise _missing("payment_intent", intent_id, param, self._other_mode_has(mode, "intents", intent_id))
        return found

    # -- for tests and the judges: the objects, unencoded ------------------------------------------------
    def intents(self, mode: str = "test") -> list[dict[str, Any]]:
        with self._lock:
            return [_public(i) for i in sorted(self.modes[mode].intents.values(), key=lambda i: i["id"])]

    def refunds(self, mode: str = "test") -> list[dict[str, Any]]:
        with self._lock:
            return [_public(r) for r in sorted(self.modes[mode].refunds.values(), key=lambda r: r["_seq"])]



def _behaviour(method: dict[str, Any] | None, fault: Fault | None, off_session: bool) -> str:
    """What confirming does: the scripted outcome, else the PaymentMethod's own behaviour. A card that
    needs authentication declines off-session with authentication_required ("the customer isn't in
    your checkout flow ... and can't authenticate": off_session, https://docs.stripe.com/api/payment_intents/create);
    on-session it waits in requires_action."""
    behaviour = fault.name if fault is not None and fault.stage == "outcome" else \
        (method or {}).get("_behaviour", "succeeds")
    if behaviour == "authentication_required" and not off_session:
        return "requires_action"
    if behaviour == "processing" or (method or {}).get("type") == "us_bank_account" and behaviour == "succeeds":
        return "processing"
    return behaviour
