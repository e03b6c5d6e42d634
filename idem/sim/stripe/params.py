"""A request as Stripe reads it: its route, and its parameters checked as Stripe checks them."""
from __future__ import annotations

import re
from typing import Any

from .errors import StripeError

#: Search and list pages: "limit ... between 1 and 100, and the default is 10"
#: (https://docs.stripe.com/api/pagination, https://docs.stripe.com/api/payment_intents/search).
DEFAULT_LIMIT, MAX_LIMIT = 10, 100
#: Metadata: "up to 50 keys, with key names up to 40 characters long and values up to 500
#: characters long" (https://docs.stripe.com/api/metadata).
MAX_METADATA_KEYS, MAX_METADATA_KEY, MAX_METADATA_VALUE = 50, 40, 500

ROUTES = [
    ("POST", re.compile(r"/v1/payment_intents"), "POST /v1/payment_intents"),
    ("GET", re.compile(r"/v1/payment_intents/search"), "GET /v1/payment_intents/search"),
    ("GET", re.compile(r"/v1/payment_intents"), "GET /v1/payment_intents"),
    ("GET", re.compile(r"/v1/payment_intents/([^/]+)"), "GET /v1/payment_intents/{id}"),
    ("POST", re.compile(r"/v1/payment_intents/([^/]+)/capture"), "POST /v1/payment_intents/{id}/capture"),
    ("POST", re.compile(r"/v1/customers"), "POST /v1/customers"),
    ("POST", re.compile(r"/v1/customers/([^/]+)"), "POST /v1/customers/{id}"),
    ("GET", re.compile(r"/v1/customers/([^/]+)"), "GET /v1/customers/{id}"),
    ("GET", re.compile(r"/v1/customers/([^/]+)/payment_methods"), "GET /v1/customers/{id}/payment_methods"),
    ("GET", re.compile(r"/v1/payment_methods"), "GET /v1/payment_methods"),
    ("GET", re.compile(r"/v1/payment_methods/([^/]+)"), "GET /v1/payment_methods/{id}"),
    ("POST", re.compile(r"/v1/payment_methods/([^/]+)/attach"), "POST /v1/payment_methods/{id}/attach"),
    ("POST", re.compile(r"/v1/refunds"), "POST /v1/refunds"),
    ("GET", re.compile(r"/v1/refunds"), "GET /v1/refunds"),
    ("GET", re.compile(r"/v1/refunds/([^/]+)"), "GET /v1/refunds/{id}"),
]


#: said of a request the loopback does not serve (idem check reads it: a handler it cannot judge, exit 2)
UNSERVED = ("This loopback Stripe serves PaymentIntents (create, retrieve, list, search, capture), Customers, "
            "PaymentMethods and Refunds only.")


def _route(method: str, path: str) -> tuple[str, list[str]]:
    for m, pattern, route in ROUTES:
        match = pattern.fullmatch(path)
        if m == method and match:
            return route, list(match.groups())
    raise StripeError(404, "invalid_request_error", f"Unrecognized request URL ({method}: {path}). {UNSERVED}")


def _stand_in_request(mode: str, params: dict[str, Any], key: str) -> dict[str, Any]:
    """The stand-in's charge for a PaymentIntent request: who (the `customer` parameter, the Customer
    charged: https://docs.stripe.com/api/payment_intents/create; with none, metadata `account`, as the
    workbook's adapter names a payer that is no Stripe customer), how much, what for (metadata
    `reference`, else `order_id`), and the key (live keys apart). Metadata is the caller's own notes:
    it never overrides who Stripe charges."""
    given = params.get("metadata")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    return {"customer": str(params.get("customer") or metadata.get("account") or ""),
            "amount": _as_int(params.get("amount"), "amount"), "currency": str(params.get("currency", "")).lower(),
            "reference": str(metadata.get("reference") or metadata.get("order_id") or ""),
            "idempotency_key": (key if mode == "test" else f"live:{key}") if key else None}


def _required(params: dict[str, Any], name: str) -> Any:
    if params.get(name) in (None, ""):
        raise StripeError(400, "invalid_request_error", f"Missing required param: {name}.",
                          code="parameter_missing", param=name)
    return params[name]


def _as_int(value: Any, param: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise StripeError(400, "invalid_request_error", "Invalid integer: " + str(value),
                          code="parameter_invalid_integer", param=param) from None


def _integer(params: dict[str, Any], name: str) -> int:
    return _as_int(_required(params, name), name)


def _boolean(params: dict[str, Any], name: str) -> bool:
    value = str(params.get(name, "false")).lower()
    if value not in ("true", "false"):
        raise StripeError(400, "invalid_request_error", f"Invalid boolean: {value}", param=name)
    return value == "true"


def _limit(params: dict[str, Any]) -> int:
    limit = _as_int(params.get("limit", DEFAULT_LIMIT), "limit")
    if not 1 <= limit <= MAX_LIMIT:
        raise StripeError(400, "invalid_request_error", "This value must be less than or equal to 100.",
                          param="limit")
    return limit


def _metadata(value: Any) -> dict[str, str]:
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise StripeError(400, "invalid_request_error", "Invalid object", param="metadata")
    if len(value) > MAX_METADATA_KEYS:
        raise StripeError(400, "invalid_request_error", f"You can specify up to {MAX_METADATA_KEYS} keys.",
                          param="metadata")
    for name, text in value.items():
        if len(name) > MAX_METADATA_KEY or len(str(text)) > MAX_METADATA_VALUE:
            raise StripeError(400, "invalid_request_error",
                              f"Metadata keys can be up to {MAX_METADATA_KEY} characters and values up to "
                              f"{MAX_METADATA_VALUE}.", param=f"metadata[{name}]")
    return {str(k): str(v) for k, v in value.items()}


def _customer_fields(params: dict[str, Any]) -> dict[str, Any]:
    return {"email": params.get("email"), "name": params.get("name"), "description": params.get("description"),
            "metadata": _metadata(params.get("metadata"))}
