"""Every botocore or AWS error the deploy can meet, as one line: what went wrong, what to do.

`explain()` never raises and never returns more than one line; `reported()` turns any
botocore error raised inside it into a DeployError carrying that line, so the command
prints `error: <line>` and never a traceback.
"""
from __future__ import annotations

import contextlib
import re
from typing import Any, Iterator, Mapping

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectionError,
    CredentialRetrievalError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
    SSLError,
    SSOError,
    TokenRetrievalError,
)
from botocore.parsers import ResponseParserError

from ..core.errors import IdemError


class DeployError(IdemError):
    """Something stopped the deploy; the message says what and what to do."""


#: Credentials that AWS no longer (or never) accepts.
CREDENTIAL_CODES = {"ExpiredToken", "ExpiredTokenException", "RequestExpired", "InvalidClientTokenId",
                    "UnrecognizedClientException", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                    "AuthFailure", "InvalidToken"}
DENIED_CODES = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
                "AuthorizationError", "Forbidden", "AllAccessDisabled"}
#: botocore's own list (botocore.retries.standard.ThrottledRetryableChecker), less
#: LimitExceededException, which CloudFormation uses for a reached quota, not a throttle.
THROTTLE_CODES = {"Throttling", "ThrottlingException", "ThrottledException",
                  "RequestThrottledException", "TooManyRequestsException",
                  "ProvisionedThroughputExceededException", "TransactionInProgressException",
                  "RequestLimitExceeded", "BandwidthLimitExceeded", "RequestThrottled", "SlowDown",
                  "PriorRequestNotComplete", "EC2ThrottledException"}
# What AWS says when IAM denies a call: "... is not authorized to perform: s3:PutObject on ..."
_DENIED_ACTION = re.compile(r"perform: ([a-z0-9-]+:[A-Za-z0-9]+)")
# CloudFormation: "Stack:arn:... is in UPDATE_IN_PROGRESS state and can not be updated."
_STACK_STATE = re.compile(r"is in ([A-Z_]+) state and can ?not be updated")
_STACK_IN_ARN = re.compile(r"stack/([A-Za-z][A-Za-z0-9-]*)/")


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace; cut a long message (AWS messages can run to paragraphs)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def operations_of(clients: Mapping[str, Any]) -> dict[str, str]:
    """Operation name -> IAM service prefix, for the clients a deployment uses."""
    found: dict[str, str] = {}
    for client in clients.values():
        model = client.meta.service_model
        for operation in model.operation_names:
            found.setdefault(operation, model.signing_name)
    return found


def iam_action(error: ClientError, operations: Mapping[str, str] | None = None) -> str:
    """The IAM action a ClientError was about: AWS's own words if it named one."""
    said = _DENIED_ACTION.search(error.response.get("Error", {}).get("Message", "") or "")
    if said:
        return said.group(1)
    operation = error.operation_name or "?"
    prefix = (operations or {}).get(operation)
    return f"{prefix}:{operation}" if prefix else operation


def explain(error: BaseException, operations: Mapping[str, str] | None = None) -> str:
    """One line for any error the deploy can meet."""
    if isinstance(error, DeployError):
        return one_line(str(error))
    if isinstance(error, ClientError):
        return one_line(_client_error(error, operations))
    if isinstance(error, BotoCoreError):
        return one_line(_botocore_error(error))
    if isinstance(error, ResponseParserError):
        return one_line("the endpoint sent an answer botocore could not read; if you set "
                        "AWS_ENDPOINT_URL, check that it points at AWS or a moto server")
    return one_line(f"{type(error).__name__}: {error}")


def _botocore_error(error: BotoCoreError) -> str:
    if isinstance(error, (SSOError, TokenRetrievalError)):  # incl. an expired or missing token
        return ("your AWS SSO session has expired or was never started: run `aws sso login` "
                "(with --profile NAME if you use one), then run this again; nothing was created")
    if isinstance(error, SSLError):
        return (f"the TLS connection to AWS failed ({error}): check the system clock, a proxy "
                "that inspects traffic, or AWS_CA_BUNDLE, then retry")
    if isinstance(error, (ConnectionError, ConnectionClosedError, ReadTimeoutError)):
        where = getattr(error, "kwargs", {}).get("endpoint_url", "the AWS endpoint")
        return (f"could not reach {where}: check your network connection and proxy settings "
                "(or AWS_ENDPOINT_URL, if you set one), then run this again")
    if isinstance(error, NoCredentialsError):
        return ("no AWS credentials found (environment, ~/.aws/credentials, SSO or instance "
                "role); run `aws configure` or set AWS_PROFILE, then retry; nothing was created")
    if isinstance(error, (PartialCredentialsError, CredentialRetrievalError)):
        return (f"your AWS credentials could not be loaded ({error}); check them with "
                "`aws configure list`, then retry")
    if isinstance(error, ProfileNotFound):
        return f"{error}; list yours with `aws configure list-profiles`"
    if isinstance(error, NoRegionError):
        return "no AWS region: pass --region (for example --region eu-west-1) or set AWS_REGION"
    return f"botocore stopped the deploy: {type(error).__name__}: {error}"


def _client_error(error: ClientError, operations: Mapping[str, str] | None) -> str:
    details = error.response.get("Error", {})
    code = str(details.get("Code", "")) or "Unknown"
    message = str(details.get("Message", "") or "")
    action = iam_action(error, operations)
    if code in CREDENTIAL_CODES:
        return (f"AWS rejected your credentials on {action} ({code}): they have expired or are "
                "wrong; refresh them (`aws sso login`, or new keys with `aws configure`) and retry")
    if code in DENIED_CODES:
        return (f"AWS denied {action} ({code}): your identity needs an IAM policy that allows "
                f"{action}; add it, or use a profile that has it (--profile), then retry")
    if code in THROTTLE_CODES:
        return (f"AWS throttled {action} ({code}) and botocore's retries ran out: wait a minute "
                "and run this again (AWS_RETRY_MODE=adaptive AWS_MAX_ATTEMPTS=10 retry longer)")
    if code == "BucketAlreadyExists":
        return ("a bucket this deploy names is taken by another AWS account (bucket names are "
                "shared by all accounts): choose another --stack name")
    if code == "BucketAlreadyOwnedByYou":
        return ("you already own a bucket this deploy wants to create, but this tool did not "
                "make it: delete that bucket or choose another --stack name")
    if code == "LimitExceededException":
        return (f"an AWS quota is reached ({action}: {message}); delete unused stacks or ask "
                "for a higher quota in Service Quotas, then retry")
    state = _STACK_STATE.search(message)
    if state:
        named = _STACK_IN_ARN.search(message)
        return stack_state_advice(state.group(1), named.group(1) if named else "NAME")
    return f"AWS refused {action} ({code}): {message or 'no message'}"


def stack_state_advice(status: str, stack: str) -> str:
    """Why CloudFormation won't change a stack in this state now, and what to do."""
    if status.endswith("_IN_PROGRESS"):
        return (f"stack {stack} is busy ({status}); CloudFormation does one thing at a time to a "
                "stack: wait until its events show it finished, then run this again")
    if status == "UPDATE_ROLLBACK_FAILED":
        # https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_ContinueUpdateRollback.html
        return (f"stack {stack} is in {status}: in the CloudFormation console choose Stack "
                "actions > Continue update rollback (or delete the stack), then run this again")
    return (f"stack {stack} is in {status} and cannot be updated: see its events for why, "
            f"delete it with `python -m idem deploy --target aws --stack {stack} --delete --yes`, "
            "then deploy again")


def retained_advice(reason: str, stack: str) -> str | None:
    """A create refused because a resource of that name exists: in prod, the books a deleted
    stack of the same name kept (template.yaml names them from the stack name). One line
    saying what to run, or None for any other failure."""
    if "already exists" not in reason and "AlreadyExists" not in reason and "ResourceInUse" not in reason:
        return None
    return (f"creating {stack!r} was refused: {reason}. A deleted prod stack of that name kept its "
            f"books ({stack}-ledger, its buckets, queues and logs); to use them, deploy again with "
            f"`--parameter-overrides ... AdoptRetained=yes` (the half-made stack was deleted; "
            f"nothing kept was touched)")


@contextlib.contextmanager
def reported(clients: Mapping[str, Any] | None = None) -> Iterator[None]:
    """Turn a botocore error raised inside into a DeployError with its one-line explanation."""
    try:
        yield
    except (BotoCoreError, ClientError, ResponseParserError) as error:
        raise DeployError(explain(error, operations_of(clients or {}))) from None
