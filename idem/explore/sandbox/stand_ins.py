"""A call to an AWS service or operation moto does not implement, answered by a stand-in.

moto has no MediaConvert, and no Rekognition DetectModerationLabels (among others): without a
stand-in such a call fails, often at import (`describe_endpoints` at module level), and the check
would blame the handler. Here the call is still a boundary like any other (faults before and after
it, its effect counted where `--effect` names it), and it is answered:

- with the answer the user gives: `--answer service:Operation=FILE`, FILE's JSON as boto3 returns
  it (`describe_endpoints()`'s dict, say);
- else with an answer made from the operation's output shape (botocore's model): every member
  present, strings named for what they hold (an `...Url`/`...Endpoint` an https URL, an `...Arn`
  an ARN, an `...Id` an id), one element per list; the same every run.

The report names every call answered so (`used`), since its effect on AWS is not modelled: a job
it starts is counted as a call, nothing more.

A call moto implements but fails to serve (an exception of its own, raised inside moto or its PartiQL
parser, not an AWS error it answers) is not the handler's doing: it is raised to the handler as
`MotoCannotServe`, which the clean run turns into exit 2 ("the check cannot judge this handler").
"""
from __future__ import annotations

import datetime
import json
from typing import Any

#: (service, Operation) -> the answer given with --answer
_given: dict[tuple[str, str], dict[str, Any]] = {}
#: "service:Operation" answered by a stand-in in this process (the clean run's are the report's)
used: dict[str, str] = {}
_installed = [False]


#: the start of a `MotoCannotServe`'s message, found in the clean run's error (idem.explore.check)
CANNOT_SERVE = "the local AWS (moto) cannot serve"
#: where moto's own code lives: an exception whose innermost frame outside the standard library is here
_MOTO_PACKAGES = ("moto", "py_partiql_parser")


class MotoCannotServe(Exception):
    """moto failed inside its own code while serving a call: the local AWS's limit, not the handler's fault."""


def moto_failed(error: BaseException) -> bool:
    """Whether `error` (not botocore's, not an AWS answer) was raised by moto's own code: the innermost
    frame of its traceback outside the standard library is in moto or its PartiQL parser."""
    import sysconfig
    import traceback
    from pathlib import Path

    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(error, (BotoCoreError, ClientError)) or not isinstance(error, Exception):
        return False
    stdlib = {Path(sysconfig.get_paths()[name]).resolve() for name in ("stdlib", "platstdlib")}
    for frame, _ in reversed(list(traceback.walk_tb(error.__traceback__))):
        path = Path(frame.f_code.co_filename).resolve()
        if any(root in path.parents for root in stdlib) and "site-packages" not in path.parts:
            continue
        return "site-packages" in path.parts and path.parts[path.parts.index("site-packages") + 1] in _MOTO_PACKAGES
    return False


class BadAnswer(ValueError):
    """--answer given wrongly (exit 2)."""


def parse(spec: str) -> tuple[str, str, dict[str, Any]]:
    """--answer service:Operation=FILE."""
    call, sep, path = spec.partition("=")
    service, colon, operation = call.partition(":")
    if not sep or not colon or not service or not operation or not path:
        raise BadAnswer(f"--answer {spec!r} is not service:Operation=FILE (for example "
                        "mediaconvert:CreateJob=job.json)")
    try:
        with open(path, encoding="utf-8") as file:
            answer = json.load(file)
    except (OSError, ValueError) as error:
        raise BadAnswer(f"--answer {spec}: cannot read {path} as JSON ({error})") from None
    if not isinstance(answer, dict):
        raise BadAnswer(f"--answer {spec}: {path} must hold a JSON object, as boto3 returns the answer")
    return service, operation, answer


def setup(answers: list[str], report_class: Any) -> None:
    """In the check's process: stand-in answers from now on, named in the reports (`report_class`); and S3's
    limit on a key's length, which moto does not keep (`s3_limits`)."""
    from . import s3_limits

    s3_limits.install()
    install(answers)
    wrap_report(report_class)


def install(answers: list[str]) -> None:
    """From now on in this process, calls moto does not implement get a stand-in answer."""
    for spec in answers:
        service, operation, answer = parse(spec)
        _given[(service, operation)] = answer
    if _installed[0]:
        return
    _installed[0] = True
    import botocore.client

    real = botocore.client.BaseClient._make_request

    def make_request(client: Any, operation_model: Any, request_dict: Any, request_context: Any) -> Any:
        service = client.meta.service_model.service_name
        key = f"{service}:{operation_model.name}"
        if (service, operation_model.name) in _given:  # the user's answer wins, implemented or not
            used.setdefault(key, "--answer")
            return _resent(client, request_context, _Http(), dict(_given[(service, operation_model.name)]))
        try:
            http, parsed = real(client, operation_model, request_dict, request_context)
        except NotImplementedError:
            http, parsed = None, None
        except Exception as error:
            if moto_failed(error):
                raise MotoCannotServe(f"{CANNOT_SERVE} {service} {operation_model.name}: "
                                      f"{type(error).__name__}: {error}") from error
            raise
        if http is not None and not _not_implemented(http, parsed):
            return http, parsed
        used.setdefault(key, "its output shape")
        return _resent(client, request_context, _Http(), shaped(operation_model.output_shape, service))

    botocore.client.BaseClient._make_request = make_request  # type: ignore[method-assign]


def _resent(client: Any, context: Any, http: Any, parsed: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A stand-in's answer as botocore's retry loop meets it: an answer a fault plan loses is lost
    after the call did its work (`idem.sim.sdk_retries.lose_answers`, as for moto's answers), and the
    call is sent again, up to the client's total_max_attempts (botocore's resolved retry config:
    https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html). Each attempt that
    did its work is counted: a stand-in models no idempotency token, so a resend is a call more."""
    from ...sim.sdk_retries import is_lost_answer, lose_answers

    retries = getattr(client.meta.config, "retries", None) or {}
    attempts = int(retries.get("total_max_attempts") or retries.get("max_attempts", 4) + 1)
    body = _Http()
    body.content = json.dumps(parsed, default=str).encode()
    for attempt in range(1, attempts + 1):
        request = type("Request", (), {"context": {**(context or {}), "retries": {"attempt": attempt}}})()
        try:
            lose_answers(request, body)
        except Exception as error:  # noqa: BLE001 -- only a lost answer is resent; anything else is raised
            if not is_lost_answer(error) or attempt == attempts:
                raise
            continue
        return http, parsed
    return http, parsed


def _not_implemented(http: Any, parsed: Any) -> bool:
    """moto's answer to a service or operation it lacks: 404 "Not yet implemented"."""
    if getattr(http, "status_code", 200) not in (404, 501):
        return False
    text = json.dumps(parsed, default=str).lower() if parsed is not None else ""
    return "not yet implemented" in text or "has not been implemented" in text


class _Http:
    status_code = 200
    headers: dict[str, str] = {}
    content = b""
    text = ""


def shaped(shape: Any, service: str, name: str = "", depth: int = 0) -> Any:
    """A value of botocore's `shape`, every member filled (see the module)."""
    if shape is None:
        return {}
    kind = shape.type_name
    if kind == "structure":
        if depth > 5:
            return {}
        return {member: shaped(sub, service, member, depth + 1) for member, sub in shape.members.items()}
    if kind == "list":
        return [shaped(shape.member, service, name, depth + 1)] if depth <= 5 else []
    if kind == "map":
        return {}
    if kind == "string":
        if shape.enum:
            return shape.enum[0]
        lower = name.lower()
        if lower.endswith(("url", "uri", "endpoint")):
            return f"https://{service}.us-east-1.amazonaws.com"
        if lower.endswith("arn"):
            return f"arn:aws:{service}:us-east-1:123456789012:stand-in"
        return f"stand-in-{name or 'value'}"
    if kind in ("integer", "long"):
        return 1
    if kind in ("double", "float"):
        return 1.0
    if kind == "boolean":
        return False
    if kind == "timestamp":
        return datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    if kind == "blob":
        return b""
    return None


def describe() -> str:
    """The report's line naming the calls answered by a stand-in, or ""."""
    if not used:
        return ""
    calls = ", ".join(f"{call} (from {source})" for call, source in sorted(used.items()))
    return (f"stand-in answers (moto does not implement these calls; their effect on AWS is not modelled, "
            f"each is counted as a call): {calls}")


def wrap_report(report_class: Any) -> None:
    """The report's text and JSON name the stand-in answers (`describe`)."""
    if getattr(report_class, "_stand_ins", False):
        return
    explain, to_json = report_class.explain, report_class.to_json

    def explain_with(self: Any) -> str:
        text = explain(self)
        line = describe()
        if not line:
            return text
        first, _, rest = text.partition("\n")
        return f"{first}\n{line}\n{rest}" if rest else f"{first}\n{line}"

    def to_json_with(self: Any) -> dict[str, Any]:
        answer = to_json(self)
        if used:
            answer["stand_ins"] = dict(sorted(used.items()))
        return answer

    report_class.explain, report_class.to_json = explain_with, to_json_with
    report_class._stand_ins = True
