"""The `idem_check` pytest fixture: check a handler in a team's own test suite.

    def test_my_handler_charges_once(idem_check):
        idem_check("my_function.py:lambda_handler", effects=["sqs:SendMessage"])

    @pytest.mark.parametrize("trigger", ["s3", "sqs", "eventbridge"])
    def test_my_queue_handler_charges_once(idem_check, trigger):
        idem_check("my_queue_function.py:lambda_handler", trigger=trigger)

The fixture runs `idem.explore.check.check_handler` with the same arguments (`trigger="sqs"` or
`"eventbridge"` for a function fed by an SQS queue or an EventBridge rule) and fails the test
with the smallest break's timeline when any schedule breaks; it returns the report otherwise.
Bad input and a check that cannot finish fail the test too, with the check's one line (and
the handler's own traceback). The handler gets Lambda's environment as `idem check` gives it
(its folder first on sys.path, Lambda's reserved variables, `env=` on top), but runs in the test's
own process: a handler that ends its process or hangs is bounded only by the CLI (`idem check`). pytest finds the fixture through the `pytest11` entry point of
`pip install '<this repository or its wheel>[check]'` (charged-twice is on no index); JUnit XML, if a CI wants it, comes from `pytest --junitxml`.
"""
from __future__ import annotations

from typing import Any, Callable

import pytest


@pytest.fixture
def idem_check() -> Callable[..., Any]:
    """A function: `idem_check(target, trigger="s3", **check_handler_options)` -> the CheckReport,
    or a failed test."""

    def run(target: str, trigger: str = "s3", **options: Any) -> Any:
        # moto and the runtime load when a test checks a handler, not whenever pytest starts
        import sys

        from .. import check
        from ..errors import CheckInputError
        from ..sandbox import stripe_sdk
        from ..target import lambda_env
        from ..target.service_names import UnknownEffect, effect_name
        from ..target.target import PATTERNS

        if ":" in target and target not in PATTERNS:  # Lambda's environment, as `idem check` gives it
            root = lambda_env.task_root(target)
            if root not in sys.path:
                sys.path.insert(0, root)  # the function's folder first: its packages import
            options["env"] = lambda_env.environment(target, root, given=options.get("env"))
            options["provider"] = stripe_sdk.provider_for(target, options.get("provider", "stand-in"))
        if options.get("provider") == "stripe":
            stripe_sdk.aim_sdk_at_loopback()
        try:
            options["effects"] = [effect_name(e) for e in options.get("effects", ())]
        except UnknownEffect as unknown:
            pytest.fail(f"idem check could not start: {unknown}", pytrace=False)
        try:
            report = check.check_handler(target, trigger=trigger, **options)
        except CheckInputError as error:
            traceback = f"\n{error.handler_traceback}" if error.handler_traceback else ""
            pytest.fail(f"idem check could not {'finish' if error.exit_code == 3 else 'start'}: "
                        f"{error}{traceback}", pytrace=False)
        if not report.holds:
            pytest.fail(report.explain(), pytrace=False)
        return report

    return run
