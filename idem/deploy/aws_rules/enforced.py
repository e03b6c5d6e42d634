"""A function's calls under its own role, with IAM enforced by moto.

moto checks IAM only when asked (`INITIAL_NO_AUTH_ACTION_COUNT`, moto's
`set_initial_no_auth_action_count`), and then for every request in the process: the
workbook's own setup and observers would be refused too. `enforced_role()` creates the
template's role in moto's IAM with its inline policies (evaluated as CloudFormation would,
then aimed at the local world's resource names), assumes it, and enforces IAM for requests
signed with that session's key only: the function's calls, nobody else's.

moto names no resource for DynamoDB or SSM requests (it checks the action against "*", which no
table- or parameter-scoped grant matches), so the table's ARN is filled in from the request's
TableName and the parameter's from its Name, as IAM would see them; S3 and SQS name their
resources themselves.

moto evaluates no Condition of an identity policy: a Deny conditioned on `dynamodb:LeadingKeys`
(the charge function may never write an `account#` item, the customer mapping) would deny every
write. Such statements are kept out of moto's copy of the policy and evaluated here instead, on
the request's partition key, as IAM does
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html).
"""
from __future__ import annotations

import contextlib
import fnmatch
import json
from typing import Any, Iterator
from unittest import mock


from ...sim.sessions import WatchedSession
from ...sim.world import ACCOUNT, REGION
from .create_rules import Names


def role_documents(cfn: dict[str, Any], role: str, renames: dict[str, str],
                   stack: str = "idem-prod") -> list[tuple[str, dict[str, Any]]]:
    """(policy name, document) of a template role, its ARNs evaluated for `stack` in moto's
    account and region, each resource of `renames` (logical id -> name) renamed."""
    names = Names(cfn, stack, REGION)
    names.pseudo["AWS::AccountId"] = ACCOUNT
    out = []
    for policy in cfn["Resources"][role]["Properties"].get("Policies", []):
        text = json.dumps(names.value(policy["PolicyDocument"]))
        for logical, physical in sorted(renames.items(), key=lambda item: -len(names.name(item[0]))):
            text = text.replace(names.name(logical), physical)
        text = text.replace(":123456789012:", f":{ACCOUNT}:")
        out.append((policy["PolicyName"], json.loads(text)))
    return out


class RoleSession(WatchedSession):
    """The runtime's watched session, signed with an assumed role's credentials."""

    def __init__(self, credentials: dict[str, str]) -> None:
        super().__init__(REGION, credentials)


def _dynamodb_resource(self: Any) -> str:
    body = self.body
    if isinstance(body, (str, bytes, bytearray)):
        try:
            body = json.loads(body or "{}")
        except ValueError:
            body = {}
    if not isinstance(body, dict) or not body.get("TableName"):
        return "*"
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{body['TableName']}"
    # a Query or Scan of an index is authorised on the index's ARN, as IAM does
    return f"{arn}/index/{body['IndexName']}" if body.get("IndexName") else arn


def _leading_key_deny(statement: dict[str, Any]) -> list[str] | None:
    """The partition key patterns of a Deny whose only condition is on dynamodb:LeadingKeys, or None."""
    condition = statement.get("Condition") or {}
    if statement.get("Effect") != "Deny" or list(condition) != ["ForAnyValue:StringLike"]:
        return None
    keys = condition["ForAnyValue:StringLike"]
    if list(keys) != ["dynamodb:LeadingKeys"]:
        return None
    values = keys["dynamodb:LeadingKeys"]
    return [values] if isinstance(values, str) else list(values)


def _partition_key(body: Any) -> str | None:
    """The `pk` a DynamoDB item request names (its Key, or its Item), or None."""
    try:
        data = json.loads(body or "{}") if isinstance(body, (str, bytes, bytearray)) else body
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    item = data.get("Key") or data.get("Item") or {}
    pk = item.get("pk") if isinstance(item, dict) else None
    return str(pk.get("S")) if isinstance(pk, dict) and "S" in pk else None


def _ssm_resource(self: Any) -> str:
    """A parameter request's resource as IAM sees it (moto checks SSM against "*" too)."""
    try:
        body = json.loads(self.body or "{}")
    except ValueError:
        return "*"
    name = body.get("Name") if isinstance(body, dict) else None
    if not name:
        return "*"
    return f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter{name if name.startswith('/') else '/' + name}"


@contextlib.contextmanager
def enforced_role(iam: Any, sts: Any, role_name: str,
                  documents: list[tuple[str, dict[str, Any]]]) -> Iterator[dict[str, str]]:
    """Create the role, assume it, and enforce IAM on its session's requests only.
    Yields the session's credentials."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.dynamodb.responses import DynamoHandler
    from moto.ssm.responses import SimpleSystemManagerResponse

    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                     "Principal": {"Service": "lambda.amazonaws.com"}}]}
    iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=json.dumps(trust))
    denies: list[tuple[set[str], list[str]]] = []  # (actions, partition key patterns) moto cannot evaluate
    for name, document in documents:
        moto_copy = dict(document, Statement=[])
        for statement in document.get("Statement", []):
            patterns = _leading_key_deny(statement)
            if patterns is None:
                moto_copy["Statement"].append(statement)
            else:
                actions = statement["Action"]
                denies.append(({actions} if isinstance(actions, str) else set(actions), patterns))
        iam.put_role_policy(RoleName=role_name, PolicyName=name, PolicyDocument=json.dumps(moto_copy))
    credentials = sts.assume_role(RoleArn=f"arn:aws:iam::{ACCOUNT}:role/{role_name}",
                                  RoleSessionName="function")["Credentials"]
    key = credentials["AccessKeyId"]
    original = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def only_the_role(self: Any, iam_request_cls: type, resource: str = "*") -> None:
        if f"Credential={key}/" not in self.headers.get("Authorization", ""):
            return  # the workbook's own calls: not the function's
        target = str(self.headers.get("X-Amz-Target") or "")
        if target.startswith("DynamoDB_"):
            action = "dynamodb:" + target.split(".")[-1]
            pk = _partition_key(self.body)
            for actions, patterns in denies:
                if action in actions and pk is not None and any(fnmatch.fnmatchcase(pk, p) for p in patterns):
                    from moto.core.exceptions import AccessDeniedError

                    raise AccessDeniedError(user_arn=f"arn:aws:sts::{ACCOUNT}:assumed-role/{role_name}/function",
                                            action=action)
        saved = settings.INITIAL_NO_AUTH_ACTION_COUNT
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0  # enforce from the first request
        try:
            original(self, iam_request_cls, resource)
        finally:
            settings.INITIAL_NO_AUTH_ACTION_COUNT = saved

    try:
        with mock.patch.object(ActionAuthenticatorMixin, "_authenticate_and_authorize_action", only_the_role), \
                mock.patch.object(DynamoHandler, "_determine_resource", _dynamodb_resource, create=True), \
                mock.patch.object(SimpleSystemManagerResponse, "_determine_resource", _ssm_resource, create=True):
            yield credentials
    finally:
        # moto's ids are seeded: the next assumed role may get the same key id, and moto finds a
        # key by id in a list, first match first. This session ends here, as the role does.
        from moto.sts.models import sts_backends

        for backend in sts_backends[ACCOUNT].values():
            backend.assumed_roles = [r for r in backend.assumed_roles if r.access_key_id != key]
        for name, _ in documents:
            iam.delete_role_policy(RoleName=role_name, PolicyName=name)
        iam.delete_role(RoleName=role_name)
