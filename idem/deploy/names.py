"""The names a deploy makes, and the rules they must pass before anything is created.

The stack name is a CloudFormation stack name, and it is also the first part of two S3
bucket names (the code bucket this tool makes, and template.yaml's UploadBucket), so it
must pass both sets of rules. Both bucket names carry the account and the region: S3
bucket names are shared by every account in every region, so the same stack deployed to
a second region must not collide with the first, nor find and reuse its code bucket.
"""
from __future__ import annotations

import ipaddress
import re

from .errors import DeployError

#: Every AWS account id is 12 digits, so the length of a bucket name is known before the
#: account is: the rules below are checked with this stand-in.
ACCOUNT_STANDIN = "0" * 12

# CloudFormation CreateStack, StackName: "can contain only alphanumeric characters (case
# sensitive) and hyphens. It must start with an alphabetical character and can't be longer
# than 128 characters."
# https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html
CFN_STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")

# S3 general purpose bucket naming rules:
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
BUCKET_CHARS = re.compile(r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3")


def code_bucket(stack: str, account: str, region: str) -> str:
    """The bucket `--target aws` uploads the packaged core to (this tool makes and tags it)."""
    return f"{stack}-code-{account}-{region}"


def upload_bucket(stack: str, account: str, region: str) -> str:
    """template.yaml's UploadBucket, as its !Sub builds it (a test holds the two equal)."""
    return f"{stack}-uploads-{account}-{region}"


def bucket_problem(name: str) -> str | None:
    """The S3 naming rule `name` breaks, or None."""
    if not 3 <= len(name) <= 63:
        return f"it has {len(name)} characters (3 to 63 allowed)"
    if not BUCKET_CHARS.match(name):
        return ("only lowercase letters, digits, dots and hyphens are allowed, "
                "beginning and ending with a letter or digit")
    if ".." in name:
        return "two dots in a row are not allowed"
    try:
        ipaddress.IPv4Address(name)
        return "it looks like an IP address"
    except ValueError:
        pass
    for prefix in BUCKET_PREFIXES:
        if name.startswith(prefix):
            return f"the prefix {prefix!r} is reserved"
    for suffix in BUCKET_SUFFIXES:
        if name.endswith(suffix):
            return f"the suffix {suffix!r} is reserved"
    return None


def check_stack_name(name: str) -> str:
    """The rules that do not depend on the region: CloudFormation's, plus what bucket
    and resource names built from the stack name need."""
    # The stack name also starts custom resource names (the bucket, the function, its log
    # group); CloudFormation's guidance for those adds: no trailing hyphen, no "--".
    # https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-name.html
    fine = (CFN_STACK_NAME.match(name) and name == name.lower() and not name.endswith("-")
            and "--" not in name)
    if not fine:
        raise DeployError(f"stack name {name!r} won't work: use lowercase letters, digits and "
                          "single dashes, starting with a letter (CloudFormation allows letters, "
                          "digits and dashes; the name also starts S3 bucket names, which "
                          "allow no capitals)")
    return name


def longest_stack_name(region: str) -> int:
    """How long a stack name can be in `region` and still make valid bucket names."""
    return 63 - len(upload_bucket("", ACCOUNT_STANDIN, region))


def check_names(stack: str, region: str) -> str:
    """Every rule, for this region: call it before anything is created or even asked."""
    check_stack_name(stack)
    for bucket in (upload_bucket(stack, ACCOUNT_STANDIN, region),
                   code_bucket(stack, ACCOUNT_STANDIN, region)):
        problem = bucket_problem(bucket)
        if problem:
            raise DeployError(
                f"stack name {stack!r} makes the S3 bucket name {bucket!r} (account id in place "
                f"of the zeros), which S3 refuses: {problem}. Use a stack name of at most "
                f"{longest_stack_name(region)} characters in {region}; nothing was created")
    return stack
