"""Step Functions' StartExecution on an EXPRESS state machine, which moto answers as it answers a STANDARD one.

AWS makes StartExecution idempotent for STANDARD workflows only: "StartExecution is idempotent for
STANDARD workflows. For a STANDARD workflow, if you call StartExecution with the same name and input as a
running execution, the call succeeds and return the same response as the original request. [...]
StartExecution isn't idempotent for EXPRESS workflows."
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html). For Express:
"Idempotency is not automatically managed. Starting multiple workflows with the same name results in
concurrent executions." (https://docs.aws.amazon.com/step-functions/latest/dg/express-at-least-once-execution.html)

moto 5.2 looks an execution up by name on every state machine, whatever its type: the same name and
input answers the execution already running, another input ExecutionAlreadyExists. Here a start on an
EXPRESS machine is always a new execution with an ARN of its own (`...:express:MACHINE:NAME:ID`, an id
per start, drawn from moto's seeded random like its other ids), so the handler gets the answer AWS
gives, and the check, which counts StartExecution by the distinct execution ARNs answered
(`idem.sim.writes.SAME_EFFECT_IDS`), counts each Express start as the execution it is.
"""
from __future__ import annotations

import functools
from typing import Any

_installed: list[Any] = []


def express_starts_anew() -> None:
    """Wrap moto's StateMachine.start_execution so an EXPRESS machine starts a new execution each
    time. Safe to call twice."""
    if _installed:
        return
    from moto.moto_api._internal import mock_random  # here: moto's Step Functions loads only when the check starts moto
    from moto.stepfunctions.models import Execution, StateMachine

    original = StateMachine.start_execution
    _installed.append(original)

    @functools.wraps(original)
    def start_execution(self: Any, region_name: str, account_id: str, execution_name: str,
                        execution_input: str) -> Any:
        if str(getattr(self, "type", "STANDARD")).upper() != "EXPRESS":
            return original(self, region_name, account_id, execution_name, execution_input)
        self._validate_execution_input(execution_input)  # moto's own check: the input is JSON
        execution = Execution(region_name=region_name, account_id=account_id, state_machine_name=self.name,
                              execution_name=execution_name, state_machine_arn=self.arn,
                              execution_input=execution_input)
        execution.execution_arn = execution.execution_arn.replace(":execution:", ":express:", 1) \
            + f":{mock_random.uuid4()}"
        self.executions.append(execution)
        return execution

    StateMachine.start_execution = start_execution  # type: ignore[method-assign]
