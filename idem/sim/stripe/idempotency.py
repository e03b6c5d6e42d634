"""Idempotency keys, as Stripe keeps them: the first answer saved once execution begins, replayed
for 24 h; the same key with other parameters refused; nothing saved for a request refused first.
(part of `StripeAccount`, https://docs.stripe.com/idempotency)"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from ...core.errors import ProviderError
from ...core.provider import Provider
from .errors import FAULTS, Answer, Fault, StripeError, _before
from .params import _stand_in_request

IDEMPOTENCY = "https://docs.stripe.com/api/idempotent_requests"
#: "Idempotency keys are up to 255 characters long." (https://docs.stripe.com/idempotency)
MAX_KEY_CHARS = 255


@dataclass
class Saved:
    """A key's first answer (IDEMPOTENCY): what was asked (fingerprint), what was answered, when."""

    fingerprint: str
    answer: Answer
    created: float


class IdempotentRequests:
    """`StripeAccount`'s idempotency layer: a write request's answer by its key."""

    provider: Provider
    replayed: dict[str, bool]
    _saved: dict[tuple[str, str], Saved]
    _in_flight: set[tuple[str, str]]
    _lock: threading.RLock

    # -- idempotency (IDEMPOTENCY, https://docs.stripe.com/idempotency) ------------------------------
    def _idempotent(self, mode: str, route: str, ids: list[str], params: dict[str, Any], key: str,
                    fault: Fault | None) -> Answer:
        if len(key) > MAX_KEY_CHARS:  # "Idempotency keys are up to 255 characters long."
            raise StripeError(400, "invalid_request_error",
                              f"Idempotency keys are up to {MAX_KEY_CHARS} characters long.")
        fingerprint = _fingerprint(route, ids, params)
        slot = (mode, key)
        if key:
            with self._lock:
                if slot in self._in_flight:  # another request holds the key: 409, nothing saved
                    return _before(FAULTS["in_flight"])
                seen = self._saved.get(slot)
                # "You can remove keys from the system automatically after they're at least 24
                # hours old. We generate a new request if a key is reused after the original is pruned."
                if seen is None or seen.created <= self._pruned_before():
                    self._in_flight.add(slot)
                    seen = None
                elif seen.fingerprint == fingerprint:
                    self.replayed[key] = True
            if seen is not None:
                if route == "POST /v1/payment_intents":
                    self._stand_in_again(mode, params, key)
                if seen.fingerprint != fingerprint:
                    # "The idempotency layer compares incoming parameters to those of the original
                    # request and errors if they're not the same" (https://docs.stripe.com/idempotency)
                    return StripeError(400, "idempotency_error", (
                        "Keys for idempotent requests can only be used with the same parameters they were "
                        f"first used with. Try using a key other than '{key}' if you meant to execute a "
                        "different request.")).as_answer()
                return _replay(seen.answer)
        try:
            try:
                answer = self._execute(mode, route, ids, params, key, fault)
            except StripeError as error:
                if not error.saved:  # "If incoming parameters fail validation ... no response is saved"
                    return error.as_answer()
                answer = error.as_answer()
            if fault is not None and fault.stage == "after" and fault.status:  # executed, then failed: a saved 500
                answer = StripeError(fault.status, fault.type, fault.message, code=fault.code).as_answer()
            if key:  # "saves the status code and body of the first request ... after endpoint execution begins"
                with self._lock:
                    self._saved[slot] = Saved(fingerprint, answer, self.now())
                    self.replayed[key] = False
            if fault is not None and fault.stage == "after" and not fault.status:
                return Answer(0, {}, drop=True)  # executed and saved; the answer is lost on the way
            return answer
        finally:
            with self._lock:
                self._in_flight.discard(slot)

    def _stand_in_again(self, mode: str, params: dict[str, Any], key: str) -> None:
        """Tell the stand-in of a request this layer answers from its saved answers: the stand-in
        replays (or refuses) it too, as it would have had it been asked alone, so a run over the
        loopback and a run over the stand-in keep the same books, down to the ids."""
        try:
            self.provider.charge(**_stand_in_request(mode, params, key))
        except (ProviderError, StripeError, ValueError):
            pass

    def _pruned_before(self) -> float:
        retention = self.provider.retention_seconds
        return -1.0 if retention is None else self.now() - retention


def _replay(answer: Answer) -> Answer:
    # A replayed answer says so with the header `Idempotent-Replayed: true` (integrations read it to
    # tell a replay from a new payment: https://github.com/advisories/GHSA-8mhj-rffc-rcvw).
    return Answer(answer.status, answer.body, {**answer.headers, "Idempotent-Replayed": "true"}, answer.drop)


def _fingerprint(route: str, ids: list[str], params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([route, ids, params], sort_keys=True).encode()).hexdigest()
