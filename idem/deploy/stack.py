"""Creating, updating and deleting one CloudFormation stack, carefully.

The same code drives moto and real AWS. Its rules:
- every stack it creates carries TAG; it updates or deletes only stacks with that tag;
- a stack that is busy, or failed in a way only a person can judge, is reported, not touched;
- a create that fails is deleted again, so nothing is left half-made; an earlier failed
  create (ROLLBACK_COMPLETE, an empty shell) is deleted and created afresh.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any

from botocore.exceptions import ClientError, WaiterError

from .errors import DeployError, retained_advice, stack_state_advice
from .names import check_stack_name as check_name

__all__ = ["TAG_KEY", "TAG_VALUE", "TAGS", "CAPABILITIES", "DeployError", "Stack", "check_name",
           "wait_until"]

TAG_KEY = "idem:deployed-by"
TAG_VALUE = "python -m idem deploy"
TAGS = [{"Key": TAG_KEY, "Value": TAG_VALUE},
        {"Key": "idem:workbook", "Value": "the-ledger-that-charged-twice"}]
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]
# A stack in UPDATE_ROLLBACK_COMPLETE is back on its previous settings and can be updated
# again ("return your stack to a working state (the UPDATE_ROLLBACK_COMPLETE state) and
# then try to update the stack again"):
# https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_ContinueUpdateRollback.html
HEALTHY = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"}
# A create that failed and rolled back leaves ROLLBACK_COMPLETE: no resources, and not a
# "last known stable state" CloudFormation can update from (RollbackStack lists those:
# https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_RollbackStack.html);
# such a stack can only be deleted, then created again ("You cannot update this stack; you
# must manually delete it", in the accepted answer copied at
# https://stackguides.com/questions/57932734/validationerror-stackarn-aws-cloudformation-stack-is-in-rollback-complete-state).
DELETE_THEN_CREATE = "ROLLBACK_COMPLETE"


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
        """'create' if the name is free, 'update' if it is our healthy stack, 'recreate' if
        it is our empty shell of a failed create; anything else is a DeployError."""
        found = self.describe()
        if found is None:
            return "create"
        status = found["StackStatus"]
        if not self.ours(found):
            raise DeployError(f"a stack named {self.name!r} already exists and was not made by "
                              f"this tool (no {TAG_KEY} tag); it is left alone: choose another "
                              "name with --stack")
        if status == DELETE_THEN_CREATE:
            return "recreate"
        if status not in HEALTHY:
            raise DeployError(stack_state_advice(status, self.name) + "; nothing was changed")
        return "update"

    def deploy(self, template: dict[str, Any], parameters: dict[str, str]) -> str:
        """Create the stack, or update it if it is ours. Returns the final status."""
        action = self.preflight()
        # template.yaml's prod profile (its default) keeps its books when deleted, by name
        keeps_books = parameters.get("Profile", "prod") == "prod" and "AdoptRetained" in json.dumps(
            template.get("Parameters", {}))
        body = json.dumps(template)
        common = {"StackName": self.name, "TemplateBody": body,
                  "Parameters": parameter_list(parameters), "Capabilities": CAPABILITIES}
        if action == "recreate":
            self._delete_now()
        if action in ("create", "recreate"):
            try:
                self.client.create_stack(**common, Tags=TAGS)
            except Exception:
                # AWS refuses before making anything; moto instead stops half-way and
                # leaves the stack CREATE_IN_PROGRESS. Either way nothing of it may stay;
                # if this cleanup fails too, the caller's teardown tries again and reports.
                with contextlib.suppress(Exception):
                    leftover = self.describe()
                    if leftover is not None and self.ours(leftover):
                        self._delete_now()
                advice = retained_advice(str(sys.exc_info()[1]), self.name) if keeps_books else None
                if advice:
                    raise DeployError(advice) from None
                raise
            status = self._wait("stack_create_complete")
            if status != "CREATE_COMPLETE":
                reason = self.failure_reason()
                self._delete_now()
                raise DeployError((retained_advice(reason, self.name) if keeps_books else None) or
                                  f"creating {self.name!r} failed ({status}): {reason}. "
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

    def delete(self, *, recognized: bool = False) -> None:
        """Delete the stack, only if this tool created it (or the caller has recognized it
        as made from template.yaml by other means: idem.deploy.sam)."""
        found = self.describe()
        if found is None:
            return
        if not (recognized or self.ours(found)):
            raise DeployError(f"stack {self.name!r} was not created by this tool (no {TAG_KEY} "
                              "tag); refusing to delete it")
        self._delete_now()

    def _delete_now(self) -> None:
        self.client.delete_stack(StackName=self.name)
        status = self._wait("stack_delete_complete")
        if status != "DELETE_COMPLETE":
            raise DeployError(f"deleting {self.name!r} ended in {status}: {self.failure_reason()}")

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

    def made(self, logical_id: str) -> str | None:
        """The physical id of a resource this stack really created and still holds, or None.
        A create that failed may name a resource it never made (a bucket name someone
        else owns, say): that one must not be touched."""
        found = self.describe()
        status = found["StackStatus"] if found else "DELETE_COMPLETE"
        if status in ("CREATE_IN_PROGRESS", "CREATE_FAILED") or status.startswith(
                ("ROLLBACK_", "DELETE_")):
            return None  # never finished creating, or being deleted: hands off
        for summary in self.client.list_stack_resources(
                StackName=self.name)["StackResourceSummaries"]:
            status = summary.get("ResourceStatus", "")
            if (summary["LogicalResourceId"] == logical_id and summary.get("PhysicalResourceId")
                    and not status.endswith("FAILED") and not status.startswith("DELETE_")):
                return summary["PhysicalResourceId"]
        return None

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
