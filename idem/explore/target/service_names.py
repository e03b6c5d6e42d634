"""`--effect SERVICE:Operation` in the names users know.

The check counts a call by botocore's endpoint prefix and the operation's name (`email:SendEmail`,
`states:StartExecution`, `monitoring:PutMetricData`). People write boto3's client names (`ses`,
`sesv2`, `stepfunctions`, `cloudwatch`), or the console's (`eventbridge`, `states`). Every one of
them is mapped to botocore's own name, read from botocore's service model; an operation is checked
against the model's operations; a typo gets the nearest names (difflib).
"""
from __future__ import annotations

import difflib
import functools
from typing import Any

#: Names people use that are not boto3 client names, and the client each means.
ALIASES = {"eventbridge": "events", "email": "ses", "states": "stepfunctions", "monitoring": "cloudwatch",
           "step-functions": "stepfunctions", "sfn": "stepfunctions", "ddb": "dynamodb", "lambda": "lambda",
           "cloudwatchlogs": "logs", "textract": "textract", "s3control": "s3control"}


class UnknownEffect(ValueError):
    """An --effect no AWS service or operation answers to, with the nearest names."""


@functools.cache
def _loader() -> Any:
    import botocore.session

    return botocore.session.get_session().get_component("data_loader")


@functools.cache
def services() -> tuple[str, ...]:
    return tuple(sorted(_loader().list_available_services("service-2")))


@functools.cache
def _model(client: str) -> dict[str, Any]:
    return dict(_loader().load_service_model(client, "service-2"))


def effect_name(text: str) -> str:
    """`text` (SERVICE:Operation, SERVICE a boto3 client name or a known alias) as the check
    counts it: ENDPOINT_PREFIX:Operation. Raises UnknownEffect, naming the nearest."""
    service, sep, operation = text.partition(":")
    if not sep or not service or not operation:
        raise UnknownEffect(f"--effect {text!r} is not SERVICE:Operation (for example sqs:SendMessage, "
                            "ses:SendEmail, sns:Publish)")
    key = service.strip().lower()
    client = ALIASES.get(key, key)
    if client not in services():
        near = difflib.get_close_matches(key, [*services(), *ALIASES], n=3, cutoff=0.6)
        raise UnknownEffect(f"--effect {text!r}: no AWS service is called {service!r}"
                            + (f"; did you mean {' or '.join(n + ':' + operation for n in near)}?" if near else
                               " (use boto3's client name, as in boto3.client('sns'))"))
    model = _model(client)
    operations = list(model.get("operations", {}))
    if operation not in operations:
        by_case = {o.lower(): o for o in operations}
        if operation.lower() in by_case:
            operation = by_case[operation.lower()]
        else:
            near = difflib.get_close_matches(operation, operations, n=3, cutoff=0.6)
            raise UnknownEffect(f"--effect {text!r}: {client} has no operation {operation!r}"
                                + (f"; did you mean {' or '.join(service + ':' + n for n in near)}?" if near else ""))
    return f"{model['metadata']['endpointPrefix']}:{operation}"
