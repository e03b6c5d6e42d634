"""Real AWS, only on purpose: the one way every command that can reach AWS opens a session.

`open_session()` wants --yes and a region, finds credentials, then asks STS who the caller is,
with short timeouts, before any command does anything. What the user must fix (no --yes, no
region, no credentials, an expired SSO session, credentials AWS rejects, an endpoint that does
not answer) is a `MustFix` error: one line, exit code 2, within 30 s. botocore's defaults
would wait 60 s to connect and 60 s to read, and retry: `python -m idem deploy` once sat
183 s on an unreachable endpoint.
https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html
"""
from __future__ import annotations

from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ..errors import CREDENTIAL_CODES, DeployError, explain

#: The probe: at most 2 attempts of 5 s to connect and 5 s to read: 20 s, under the 30 promised.
PROBE = Config(connect_timeout=5, read_timeout=5, retries={"total_max_attempts": 2, "mode": "standard"})
#: Every client a command makes afterwards: quick to give up connecting, patient reading.
CLIENTS = Config(connect_timeout=5, read_timeout=60)


class MustFix(DeployError):
    """Something only the user can fix, found before anything was made: exit code 2."""


def open_session(region: str | None, yes: bool, profile: str | None = None, *,
                 what: str = "this command reaches your AWS account") -> Any:
    """A boto3 session whose caller is known, or MustFix before any resource is touched."""
    session = local_session(region, yes, profile, what=what)
    identity(session)
    return session


def local_session(region: str | None, yes: bool, profile: str | None = None, *,
                  what: str = "this command reaches your AWS account") -> Any:
    """The session, checked without a call: --yes, a region, credentials found."""
    if not yes:
        raise MustFix(f"{what}; add --yes to go ahead")
    import boto3

    try:
        session = boto3.Session(region_name=region or None, profile_name=profile or None)
        if not session.region_name:
            raise MustFix("no AWS region: pass --region (for example --region eu-west-1) or set "
                          "AWS_REGION; nothing was touched")
        if session.get_credentials() is None:
            raise MustFix("no AWS credentials found (environment, ~/.aws/credentials, SSO or instance "
                          "role); run `aws configure` or set AWS_PROFILE, then retry; nothing was touched")
    except BotoCoreError as error:
        raise MustFix(explain(error)) from None
    return session


def identity(session: Any) -> dict[str, Any]:
    """STS GetCallerIdentity (needs no permission): reachable, and credentials accepted."""
    try:
        return session.client("sts", config=PROBE).get_caller_identity()
    except BotoCoreError as error:
        raise MustFix(explain(error)) from None
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in CREDENTIAL_CODES:
            raise MustFix(explain(error)) from None
        raise DeployError(explain(error)) from None
