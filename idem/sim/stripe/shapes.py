"""What Stripe publishes of its shapes, as a checker for the loopback Stripe's answers and for the
requests the handler and idem send it.

Two sources, both generated from or part of Stripe's OpenAPI description:
- stripe-python 16's resource classes (`stripe.PaymentIntent`, ...) and typed request parameters
  (`stripe.params.PaymentIntentCreateParams`, ...): "File generated from our OpenAPI spec". They give
  each field's type (Literal enums included) and, for requests, which parameters exist and which are
  required.
- `openapi_fields.json`: the top-level fields of each resource in Stripe's own fixtures
  (stripe/openapi `openapi/fixtures3.json`, commit noted in the file): Stripe serves every field of
  an object, null or not, so each of them must be in what the loopback serves.
"""
from __future__ import annotations

import functools
import json
import types
import typing
from pathlib import Path
from typing import Any

import stripe
import stripe.params as stripe_params
from stripe._stripe_object import StripeObject

__all__ = ["FIELDS", "RESOURCES", "REQUESTS", "check_request", "check_response", "unknown_parameters"]

FIELDS: dict[str, list[str]] = json.loads(
    (Path(__file__).with_name("openapi_fields.json")).read_text())["resources"]

#: The resource class of each `object` the loopback serves.
RESOURCES: dict[str, type] = {"payment_intent": stripe.PaymentIntent, "customer": stripe.Customer,
                              "payment_method": stripe.PaymentMethod, "refund": stripe.Refund}
#: The typed parameters of each route the loopback serves.
REQUESTS: dict[str, type] = {
    "POST /v1/payment_intents": stripe_params.PaymentIntentCreateParams,
    "GET /v1/payment_intents": stripe_params.PaymentIntentListParams,
    "GET /v1/payment_intents/search": stripe_params.PaymentIntentSearchParams,
    "GET /v1/payment_intents/{id}": stripe_params.PaymentIntentRetrieveParams,
    "POST /v1/payment_intents/{id}/capture": stripe_params.PaymentIntentCaptureParams,
    "POST /v1/customers": stripe_params.CustomerCreateParams,
    "POST /v1/customers/{id}": stripe_params.CustomerUpdateParams,
    "GET /v1/customers/{id}": stripe_params.CustomerRetrieveParams,
    "GET /v1/customers/{id}/payment_methods": stripe_params.CustomerListPaymentMethodsParams,
    "GET /v1/payment_methods": stripe_params.PaymentMethodListParams,
    "GET /v1/payment_methods/{id}": stripe_params.PaymentMethodRetrieveParams,
    "POST /v1/payment_methods/{id}/attach": stripe_params.PaymentMethodAttachParams,
    "POST /v1/refunds": stripe_params.RefundCreateParams,
    "GET /v1/refunds": stripe_params.RefundListParams,
    "GET /v1/refunds/{id}": stripe_params.RefundRetrieveParams,
}
#: Request options stripe-python's params classes inherit (RequestOptions), sent as headers, not parameters.
OPTIONS = {"api_key", "stripe_version", "stripe_account", "stripe_context", "idempotency_key", "headers",
           "max_network_retries", "base_address", "content_type"}


class _Names(dict[str, Any]):
    """Names the generated annotations refer to: stripe's classes, found when first asked for."""

    def __missing__(self, name: str) -> Any:
        import builtins
        import typing_extensions

        for home in (builtins, stripe, stripe_params, typing, typing_extensions):
            if hasattr(home, name):
                return getattr(home, name)
        return _Unknown  # a class of a product the loopback does not serve (test_helpers.TestClock, ...)


class _Unknown:
    """A type the annotations name that the checker does not resolve: anything goes."""

    def __class_getitem__(cls, item: Any) -> Any:
        return Any


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    import sys

    return typing.get_type_hints(cls, globalns=vars(sys.modules[cls.__module__]), localns=_Names(),
                                 include_extras=True)


def check_response(body: Any, path: str = "") -> list[str]:
    """Problems with an answer body: an object (`object` names its resource), a list or search page
    of them, or an error body. Empty when the body is Stripe's shape."""
    if not isinstance(body, dict):
        return [f"{path or 'body'}: not an object"]
    if "error" in body and len(body) == 1:
        return _check_error(body["error"], f"{path}error")
    kind = body.get("object")
    if kind in ("list", "search_result"):
        problems = [f"{path}{name}: missing" for name in ("data", "has_more", "url") if name not in body]
        if kind == "search_result" and "next_page" not in body:
            problems.append(f"{path}next_page: missing")
        for i, item in enumerate(body.get("data") or []):
            problems += check_response(item, f"{path}data[{i}].")
        return problems
    if kind not in RESOURCES:
        return [f"{path}object: {kind!r} is not a resource the loopback serves"]
    return _check_object(body, _hints(RESOURCES[kind]), path.rstrip("."), FIELDS[kind])


def _check_error(error: Any, path: str) -> list[str]:
    """An error body (https://docs.stripe.com/api/errors): `type` one of the four, `message`, and
    the fields of stripe-python's ErrorObject (stripe/_error_object.py), each typed."""
    from stripe._error_object import ErrorObject

    if not isinstance(error, dict):
        return [f"{path}: not an object"]
    problems = []
    if error.get("type") not in ("api_error", "card_error", "idempotency_error", "invalid_request_error"):
        problems.append(f"{path}.type: {error.get('type')!r} is not one of Stripe's four error types")
    if isinstance(error.get("payment_intent"), dict):
        problems += check_response(error["payment_intent"], f"{path}.payment_intent.")
    if isinstance(error.get("payment_method"), dict):
        problems += check_response(error["payment_method"], f"{path}.payment_method.")
    hints = {k: v for k, v in _hints(ErrorObject).items() if k not in ("payment_intent", "payment_method")}
    hints.update(payment_intent=Any, payment_method=Any)
    return problems + _check_object(error, hints, path, ["type", "message"])


def _check_object(obj: Any, hints: dict[str, Any], path: str, required: list[str]) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{path}: not an object"]
    problems = [f"{path}.{name}: missing" for name in required if name not in obj]
    for name, value in obj.items():
        if name not in hints:
            problems.append(f"{path}.{name}: not a field of {obj.get('object', 'this object')} in stripe-python")
            continue
        problems += _check_value(value, hints[name], f"{path}.{name}", from_form=False)
    return problems


def check_request(route: str, params: dict[str, Any]) -> list[str]:
    """Problems with a request's parameters (decoded from the form or query string, so numbers
    and booleans arrive as text) against stripe-python's typed parameters for the route."""
    if route not in REQUESTS:
        return [f"{route}: no typed parameters known"]
    return _check_typed_dict(params, REQUESTS[route], route)


def unknown_parameters(route: str, params: dict[str, Any]) -> list[str]:
    """The parameters of a request that its route does not take, as Stripe names them
    (`automatic_payment_methods[foo]`); empty for a route with no typed parameters known."""
    if route not in REQUESTS:
        return []
    found = []
    for problem in check_request(route, params):
        where, _, what = problem.partition(": ")
        if what.startswith("not a parameter of"):
            parts = where[len(route) + 1:].split(".")
            found.append(parts[0] + "".join(f"[{p}]" for p in parts[1:]))
    return found


def _check_typed_dict(value: dict[str, Any], cls: type, path: str) -> list[str]:
    hints = _hints(cls)
    required: frozenset[str] = getattr(cls, "__required_keys__", frozenset()) - OPTIONS
    problems = [f"{path}.{name}: required, missing" for name in sorted(required) if name not in value]
    for name, item in value.items():
        if name not in hints or name in OPTIONS:
            problems.append(f"{path}.{name}: not a parameter of {cls.__name__}")
            continue
        problems += _check_value(item, hints[name], f"{path}.{name}", from_form=True)
    return problems


def _check_value(value: Any, hint: Any, path: str, *, from_form: bool) -> list[str]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is _Unknown:
        return []
    if origin in (typing.Annotated,) or str(origin).endswith(("NotRequired", "Required")):
        return _check_value(value, args[0], path, from_form=from_form)
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return []
        if from_form and value == "" and type(None) in args:  # an empty form value unsets a field
            return []
        if str in args and any(typing.get_origin(a) is typing.Literal for a in args):
            # `Union[Literal[...], str]`: the SDK's room for enum values added later; the enum is Stripe's.
            args = tuple(a for a in args if a is not str)
        for option in args:
            if option is not type(None) and not _check_value(value, option, path, from_form=from_form):
                return []
        return [f"{path}: {value!r} fits none of {hint}"]
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: {value!r} is not one of {list(args)}"]
    if origin in (list, typing.List):
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [p for i, v in enumerate(value) for p in _check_value(v, args[0], f"{path}[{i}]", from_form=from_form)]
    if origin in (dict, typing.Dict) or (isinstance(origin, type) and issubclass(origin, StripeObject)):
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        inner = args[-1] if args else Any
        return [p for k, v in value.items() for p in _check_value(v, inner, f"{path}[{k}]", from_form=from_form)]
    if hint is type(None):
        return [] if value is None else [f"{path}: should be null"]
    if hint is bool:
        ok = isinstance(value, bool) or (from_form and value in ("true", "false"))
        return [] if ok else [f"{path}: {value!r} is not a boolean"]
    if hint is int:
        ok = (isinstance(value, int) and not isinstance(value, bool)) or \
            (from_form and isinstance(value, str) and value.lstrip("-").isdigit())
        return [] if ok else [f"{path}: {value!r} is not an integer"]
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if from_form and isinstance(value, str):
            try:
                float(value)
                ok = True
            except ValueError:
                ok = False
        return [] if ok else [f"{path}: {value!r} is not a number"]
    if hint is str:
        return [] if isinstance(value, str) else [f"{path}: {value!r} is not a string"]
    if isinstance(hint, type) and issubclass(hint, StripeObject):
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        if hint in RESOURCES.values():  # an expanded resource
            return check_response(value, path + ".")
        hints = _hints(typing.cast(Any, hint))
        return [p for k, v in value.items()
                for p in (_check_value(v, hints[k], f"{path}.{k}", from_form=from_form) if k in hints
                          else [f"{path}.{k}: not a field of {hint.__qualname__}"])]
    if isinstance(hint, type) and hasattr(hint, "__required_keys__"):  # a TypedDict
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        return _check_typed_dict(value, hint, path)
    if isinstance(hint, typing.TypeVar) or isinstance(hint, typing.ForwardRef):
        return []
    return [f"{path}: cannot check against {hint!r}"]
