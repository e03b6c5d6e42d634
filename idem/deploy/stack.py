"""Creating, updating and deleting one CloudFormation stack, carefully.

The same code drives moto and real AWS. Its rules:
- every stack it creates carries TAG; it updates or deletes only stacks with that tag;
- a stack left in a failed or busy state is reported, not touched;
- a create that fails is deleted again, so nothing is left half-made.
"""
from __future__ import annotations

import json
import re
import time
from typing import Any

from botocore.exceptions import ClientError, WaiterError

TAG_KEY = "idem:deployed-by"
TAG_VALUE = "python -m idem deploy"
TAGS = [{"Key": TAG_KEY, "Value": TAG_VALUE},
        {"Key": "idem:workbook", "Value": "the-ledger-that-charged-twice"}]
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]
#: Bucket names are built from the stack name (template.yaml), so the stack name must be
#: lowercase, and short enough for "<name>-uploads-<12-digit account>" to fit in 63.
STACK_NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
HEALTHY = {"CREATE_COMPLETE", "UPDATE_COMPLETE"}


class DeployError(RuntimeError):
    """Something stopped the deploy; the message says what and what to do."""


def check_name(name: str) -> str:
    if not STACK_NAME.match(name) or name.endswith("-"):
        raise DeployError(f"stack name {name!r} won't work: use 1-40 lowercase letters, digits "
                          "and dashes, starting with a letter (it becomes part of the bucket name)")
    return name


def parameter_list(parameters: dict[str, str]) -> list[dict[str, str]]:
    return [{"ParameterKey": k, "ParameterValue": v} for k, v in sorted(parameters.items())]


class Stack:
    """One named stack, through a CloudFormation client (moto's or AWS's)."""

    def __init__(self, client: Any, name: str, *, poll_seconds: float = 5.0) -> None:
        self.client = client
        self.name = check_name(name)
        self.poll_seconds = poll_seconds

    def describe(self) -> dict[str, Any] | None:
        try:
            return self.client.describe_stacks(StackName=self.name)["Stacks"][0]
        except ClientError as error:
            if "does not exist" in error.response.get("Error", {}).get("Message", ""):
                return None
            raise

    @staticmethod
    def ours(description: dict[str, Any]) -> bool:
        return any(t["Key"] == TAG_KEY and t["Value"] == TAG_VALUE
                   for t in description.get("Tags", []))

    def preflight(self) -> str:
        """'create' if the name is free, 'update' if it is our healthy stack; else DeployError."""
        found = self.describe()
        if found is None:
            return "create"
        status = found["StackStatus"]
        if not self.ours(found):
            raise DeployError(f"a stack named {self.name!r} already exists and was not made by "
                              f"this tool (no {TAG_KEY} tag); it is left alone: choose another "
                              "name with --stack")
        if status not in HEALTHY:
            raise DeployError(f"stack {self.name!r} is in state {status}; nothing was changed. "
                              "Look at its events in the CloudFormation console, then delete it "
                              f"with `python -m idem deploy --target aws --stack {self.name} "
                              "--delete --yes` and try again")
        return "update"

    def deploy(self, template: dict[str, Any], parameters: dict[str, str]) -> str:
        """Create the stack, or update it if it is ours. Returns the final status."""
        action = self.preflight()
        body = json.dumps(template)
        common = {"StackName": self.name, "TemplateBody": body,
                  "Parameters": parameter_list(parameters), "Capabilities": CAPABILITIES}
        if action == "create":
            self.client.create_stack(**common, Tags=TAGS)
            status = self._wait("stack_create_complete")
            if status != "CREATE_COMPLETE":
                reason = self.failure_reason()
                self._delete_now()
                raise DeployError(f"creating {self.name!r} failed ({status}): {reason}. "
                                  "The half-made stack was deleted again")
            return status
        try:
            self.client.update_stack(**common)
        except ClientError as error:
            if "No updates are to be performed" in str(error):
                return self.describe()["StackStatus"]
            raise
        status = self._wait("stack_update_complete")
        if status != "UPDATE_COMPLETE":
            raise DeployError(f"updating {self.name!r} failed ({status}): {self.failure_reason()}; "
                              "CloudFormation rolled it back to the previous settings")
        return status

    def delete(self) -> None:
        """Delete the stack, only if this tool created it."""
        found = self.describe()
        if found is None:
            return
        if not self.ours(found):
            raise DeployError(f"stack {self.name!r} was not created by this tool (no {TAG_KEY} "
                              "tag); refusing to delete it")
        self._delete_now()

    def _delete_now(self) -> None:
        self.client.delete_stack(StackName=self.name)
        self._wait("stack_delete_complete")
        leftover = self.describe()
        if leftover is not None and leftover["StackStatus"] != "DELETE_COMPLETE":
            raise DeployError(f"deleting {self.name!r} ended in {leftover['StackStatus']}: "
                              f"{self.failure_reason()}")

    def _wait(self, waiter_name: str) -> str:
        try:
            self.client.get_waiter(waiter_name).wait(
                StackName=self.name,
                WaiterConfig={"Delay": self.poll_seconds, "MaxAttempts": int(1800 / self.poll_seconds)})
        except WaiterError:
            pass  # the status below says what happened
        found = self.describe()
        return found["StackStatus"] if found else "DELETE_COMPLETE"

    def failure_reason(self) -> str:
        """The first resource failure in the stack's events, oldest first."""
        try:
            events = self.client.describe_stack_events(StackName=self.name)["StackEvents"]
        except ClientError:
            return "no events to explain it"
        for event in reversed(events):
            if event.get("ResourceStatus", "").endswith("FAILED"):
                return f"{event['LogicalResourceId']}: {event.get('ResourceStatusReason', '?')}"
        return "no resource reported a failure"

    def outputs(self) -> dict[str, str]:
        found = self.describe() or {}
        return {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}

    def physical_ids(self) -> dict[str, str]:
        summaries = self.client.list_stack_resources(StackName=self.name)["StackResourceSummaries"]
        return {s["LogicalResourceId"]: s.get("PhysicalResourceId", "") for s in summaries}


def wait_until(condition: Any, *, timeout: float, every: float, sleep: Any = time.sleep) -> bool:
    """Poll condition() until it is true or timeout seconds pass (real time: AWS only)."""
    waited = 0.0
    while not condition():
        if waited >= timeout:
            return False
        sleep(every)
        waited += every
    return True
