"""`python -m idem deploy`: deploy template.yaml, watch naive charge twice and keyed once.

--target moto (the default) runs everything in this process against moto and needs no
account. --target aws needs credentials, a region and --yes, and deletes what it made;
it talks to whatever endpoint botocore is configured with, so AWS_ENDPOINT_URL pointed at a
moto server rehearses it offline. Every error ends the command with one line on stderr.
The deploy modules (boto3, moto, samtranslator) are imported inside run(): the CLI loads this
module at start for every command, and `--help` must work on a plain install.
"""
from __future__ import annotations

import argparse
import sys

HELP = "deploy template.yaml (moto by default, real AWS with --target aws --yes)"
MOTO_REGION = "us-east-1"  # idem.sim.world.REGION, without importing moto at CLI start
AWS_ONLY = ("yes", "keep", "delete", "empty_bucket", "sam", "region", "profile")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", choices=("moto", "aws"), default="moto",
                        help="moto: in-process, offline (default); aws: your AWS account")
    parser.add_argument("--stack", default="idem-demo", help="stack name (default idem-demo)")
    parser.add_argument("--region", help="aws: the region (default: your AWS config)")
    parser.add_argument("--profile", help="aws: a named profile from your AWS config")
    parser.add_argument("--yes", action="store_true",
                        help="aws: go ahead and create (or delete) real resources")
    parser.add_argument("--keep", action="store_true",
                        help="aws: leave the stack running at the end (prints what it costs)")
    parser.add_argument("--delete", action="store_true",
                        help="aws: only delete a stack this tool created earlier, emptying its "
                             "versioned bucket first")
    parser.add_argument("--empty-bucket", action="store_true",
                        help="aws: only empty the stack's versioned upload bucket (every version "
                             "and delete marker), so that `sam delete` can delete the stack")
    parser.add_argument("--sam", action="store_true",
                        help="aws, with --delete or --empty-bucket: the stack was made from this "
                             "template.yaml with `sam deploy` (checked before anything is touched)")
    parser.add_argument("--wait", type=float, default=300, metavar="SECONDS",
                        help="aws: how long to wait for each upload's charges (default 300)")


def run(args: argparse.Namespace) -> int:
    from ..deploy.names import check_names
    from ..deploy.stack import DeployError, check_name

    try:
        check_name(args.stack)  # the region's limits: below for moto, in preflight for aws
        if args.target == "moto":
            check_names(args.stack, MOTO_REGION)
    except DeployError as problem:
        return _fail(str(problem), code=2)
    given = [f"--{name.replace('_', '-')}" for name in AWS_ONLY if getattr(args, name)]
    if args.target == "moto" and given:
        return _fail(f"{', '.join(given)}: only used with --target aws", code=2)
    if args.delete and args.empty_bucket:
        return _fail("--delete already empties the bucket; give one of them", code=2)
    if args.sam and not (args.delete or args.empty_bucket):
        return _fail("--sam goes with --delete or --empty-bucket", code=2)
    from ..deploy.aws.connect import MustFix

    try:
        if args.target == "moto":
            return _moto(args)
        return _aws(args)
    except MustFix as problem:  # found before anything was made: the user's to fix
        return _fail(str(problem), code=2)
    except DeployError as problem:
        return _fail(str(problem))
    except Exception as error:  # a botocore error that slipped past: still one line
        from botocore.exceptions import BotoCoreError, ClientError
        from botocore.parsers import ResponseParserError

        from ..deploy.errors import explain

        if isinstance(error, (BotoCoreError, ClientError, ResponseParserError)):
            return _fail(explain(error))
        raise


def _moto(args: argparse.Namespace) -> int:
    from ..deploy.local.moto_target import dry_run

    print("target moto: an AWS of its own inside this process; nothing leaves the machine\n")
    deployment = dry_run(args.stack)
    return _verdict(deployment.runs)


def _aws(args: argparse.Namespace) -> int:
    from ..deploy.aws import aws_target

    if args.wait <= 0:
        return _fail("--wait must be a positive number of seconds", code=2)
    session = aws_target.preflight(args.region, args.yes, args.profile, stack=args.stack)
    if args.delete:
        # Nothing there to delete is not an error: the state asked for (nothing left) holds,
        # a rerun after an interrupted teardown must succeed, and the message names the
        # account and region, so a wrong --region or --profile shows.
        aws_target.delete(session, args.stack, sam_made=args.sam)
        return 0
    if args.empty_bucket:
        aws_target.empty_bucket(session, args.stack, sam_made=args.sam)
        return 0
    print(f"target aws: real resources in {session.region_name}, tagged and deleted at the end"
          + (" (kept: --keep)" if args.keep else "") + "\n")
    return _verdict(aws_target.run(session, args.stack, keep=args.keep, wait_seconds=args.wait))


def _verdict(runs: list) -> int:
    """The demo's point, checked: naive charged twice for one upload, keyed once."""
    charges = {run.mode: run.charges for run in runs}
    print()
    if charges == {"naive": 2, "keyed": 1}:
        print("naive charged twice for one upload; the same stack switched to keyed charged once.")
        return 0
    return _fail(f"expected naive 2 charges and keyed 1, got {charges}")


def _fail(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code
