"""What the clean run did, kept to say why it was refused: its return value and last log lines, and
the last call of the handler's that AWS answered "no such resource"."""
from __future__ import annotations

from typing import Any


#: What moto (as AWS) answers for a resource that does not exist, by error code.
NOT_FOUND = ("ResourceNotFoundException", "NonExistentQueue", "AWS.SimpleQueueService.NonExistentQueue",
             "QueueDoesNotExist", "NotFound", "NotFoundException", "NoSuchBucket", "MessageRejected",
             "StateMachineDoesNotExist", "ResourceNotFound")
#: The parameters that name the resource a call is about.
NAMES = ("TableName", "QueueUrl", "TopicArn", "TargetArn", "Bucket", "Source", "FromEmailAddress",
         "StateMachineArn", "EventBusName", "FunctionName", "StreamName", "DeliveryStreamName", "SecretId", "Name")


class CleanRun:
    """Remembers the clean run (its return value and last log lines) and the last call of the
    handler that AWS answered "no such resource", to say both when the clean run is refused."""

    def __init__(self, runner: Any) -> None:
        self.result: Any = None
        self.missing: tuple[str, str, str, str] | None = None
        real_batch = runner.run_batch

        def run_batch(*args: Any, **kwargs: Any) -> Any:
            results = real_batch(*args, **kwargs)
            first = args[5] if len(args) > 5 else kwargs.get("first")
            if first == getattr(runner, "CLEAN_RUN", None) and results:
                self.result = results[0]
            return results

        runner.run_batch = run_batch
        import botocore.client
        from botocore.exceptions import ClientError

        real_call = botocore.client.BaseClient._make_api_call
        watcher = self

        def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            try:
                return real_call(client, operation, params)
            except ClientError as error:
                code = str(error.response.get("Error", {}).get("Code", ""))
                named = next(((n, params[n]) for n in NAMES if isinstance(params.get(n), str)), None)
                if named and (code in NOT_FOUND or "does not exist" in str(error) or "not found" in str(error)):
                    service = client.meta.service_model.service_name
                    watcher.missing = (f"{service}:{operation}", named[0], named[1], code)
                raise

        botocore.client.BaseClient._make_api_call = call  # type: ignore[method-assign]

    def resource_missing(self, report: Any) -> bool:
        """The report is the clean run's break (it failed with no fault) and what failed it is AWS
        answering "no such resource" to the handler's call: the check's AWS lacks what the team's
        own has (a topic, a queue), which is input to give (exit 2), not the handler's break (1)."""
        results = getattr(report, "results", [])
        if self.missing is None or len(results) != 1 or not getattr(results[0], "clean", False):
            return False
        code = self.missing[3]
        return any(a.failed and code in str(getattr(a, "error", "")) for a in results[0].attempts)

    def explain(self, error: Any) -> str:
        message = str(error)
        clean_failed = "on a clean run" in message
        if clean_failed and self.missing:
            call, param, value, code = self.missing
            return (f"the handler called {call} with {param}={value}, which exists nowhere in the check's AWS "
                    f"({code}): create it with --template template.yaml --function LOGICAL_ID (the template's "
                    "resources are made with their names) or --setup MODULE:FUNCTION (your own set-up, given a "
                    "boto3 Session on the check's AWS), and give the handler its name with --env NAME=VALUE")
        if clean_failed and self.result is not None and ("made no charge" in message or "never happens" in message):
            attempt = self.result.attempts[0] if self.result.attempts else None
            if attempt is not None:
                returned = repr(getattr(attempt, "result", None))
                logs = [line[:200] for line in getattr(attempt, "logs", [])[-3:]]
                message += (f" On the clean run it returned {returned[:300]}"
                            + (f" and its last log lines were: {' | '.join(logs)}" if logs else " and printed nothing"))
        return message
