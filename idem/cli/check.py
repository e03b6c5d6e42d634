"""`python -m idem check`: any Lambda handler through every schedule (see `idem.explore.check`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from typing import Any

from ..console import UsageError

HELP = "check any Lambda handler against every schedule of faults and deliveries"
#: The workbook's own patterns, by name (`idem.explore.target.target.PATTERNS`, without importing moto).
PATTERNS = ("naive", "claim_first", "robust", "keyed")
#: What can feed the function (`idem.sim.triggers.TRIGGERS`, without importing moto).
TRIGGERS = ("s3", "sqs", "eventbridge")
#: What the schedules are, and how many each family adds (`idem.explore.families.build.DIMENSIONS`).
SCHEDULES = ("schedules, in families (the report counts each; under --trigger sqs, the overwrite family is the "
             "uploader's retried PUT and there is no slow family: docs/reliability.md): faults, exhaustive: every fault "
             "at every boundary x one upload delivered once, twice or as a copy at each boundary x "
             "each retry setting; overwrite: a second upload of the same name, in a versioned and an "
             "unversioned bucket, after the first or while it is at each place a copy can start, no "
             "fault: 2 x (1 + places) per retry setting; slow: each call's request or answer in "
             "flight until 1 s before the timeout, a copy starting meanwhile or none, no fault: 4 x calls "
             "per retry setting; runs: one call failing 2, 3 or every time in a row (throttled each time the handler "
             "calls it again, or its answer lost on 2 or every one of the SDK's own attempts: botocore and "
             "Stripe's SDK resend a request whose answer was lost, as the handler's client is configured), "
             "one delivery, per retry setting; late, retry_ends, again, accounts: each delay drawn from its "
             "documented range and at both its ends, the same order sent again a day and 3 days later, "
             "redriven after every attempt failed, another account's order with the same order id; "
             "second_fault: a schedule of the others again, a call that only its fault led to (a retry asking "
             "Stripe or the provider whether the first attempt charged, taking over a claim; a release on the "
             "way to a failure; a redrive's look-up a day later; with no fault, the park of a second order at "
             "one name) failing too, on its first arrival: throttled, or its answer lost and the call resent")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", help="MODULE:FUNCTION or FILE.py:FUNCTION of your handler, or one "
                                                  f"of the workbook's patterns: {', '.join(PATTERNS)} "
                                                  "(or --template and --function instead; with them, the "
                                                  "handler's source where a build step fills the CodeUri)")
    parser.add_argument("--template", default=None, metavar="TEMPLATE",
                        help="a SAM or CloudFormation template: with --function, the check reads the "
                             "function's handler, folder, environment, memory and trigger from it, and "
                             "creates the template's tables, queues, topics, buckets, SES identities and "
                             "event buses on its AWS with the template's names before the clean run")
    parser.add_argument("--function", default=None, metavar="LOGICAL_ID",
                        help="the function's logical id in --template; the runs use its Timeout, MemorySize, "
                             "MaximumRetryAttempts, MaximumEventAgeInSeconds, its failure destination (DeadLetterQueue or "
                             "OnFailure; none: a failed event is discarded, a silent loss) and, fed by SQS, its BatchSize, "
                             "ReportBatchItemFailures and its queue's VisibilityTimeout and maxReceiveCount "
                             "(Globals included; AWS's defaults where the template says nothing), stated in "
                             "the report's header")
    parser.add_argument("--parameter", action="append", default=[], metavar="NAME=VALUE", dest="parameters",
                        help="a value for one of --template's Parameters (repeatable; wins over --parameters-file)")
    parser.add_argument("--parameters-file", default=None, metavar="FILE",
                        help="--template's parameter values as sam deploy takes them: a samconfig.toml/.yaml "
                             "(parameter_overrides under [default.deploy.parameters]), a file holding a "
                             "--parameter-overrides string (KEY=VALUE or ParameterKey=KEY,ParameterValue=VALUE), "
                             "or CloudFormation's parameters JSON")
    parser.add_argument("--effect", action="append", default=[], metavar="SERVICE:Operation",
                        help="an AWS call that must happen once per upload, like the charge "
                             "(repeatable; boto3's client names: sqs:SendMessage, ses:SendEmail, "
                             "sesv2:SendEmail, sns:Publish, events:PutEvents, stepfunctions:StartExecution). "
                             "Messages, emails and jobs are counted; a write (dynamodb:PutItem, UpdateItem, "
                             "DeleteItem, BatchWriteItem, TransactWriteItems; s3:PutObject, the transfer "
                             "manager's included, CopyObject, DeleteObject) is judged by what it leaves: after "
                             "each schedule the items and objects it wrote are read back (by key, by content, "
                             "leaving out fields that differ between two clean runs) and compared with the "
                             "clean run's, once per order uploaded; the same state is not a second effect, "
                             "an item too many is, other content is a break")
    parser.add_argument("--answer", action="append", default=[], metavar="service:Operation=FILE",
                        help="the answer to a call moto does not implement (MediaConvert, Rekognition's "
                             "DetectModerationLabels, ...): FILE's JSON, as boto3 returns it (repeatable). Without "
                             "one, such a call is answered from its output shape; the report names every call "
                             "answered so")
    parser.add_argument("--python-path", action="append", default=[], metavar="DIR",
                        help="a folder of the function's dependencies (its requirements.txt installed with "
                             "pip install -r requirements.txt -t DIR, or a Layer's python/ folder), on sys.path "
                             "after the function's own folder (repeatable)")
    parser.add_argument("--install-requirements", action="store_true",
                        help="install the function's requirements.txt (and its template Layers': a python/ folder, "
                             "or their requirements.txt) with pip as this machine configures it, once, into a "
                             "folder kept by the file's hash ($IDEM_CHECK_CACHE, else ~/.cache/idem-check), "
                             "reused offline by later checks, and put them on sys.path as --python-path does")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for the handler's environment (repeatable)")
    parser.add_argument("--object", action="append", default=[], metavar="FILE[=KEY]", dest="objects",
                        help="what lands in the bucket: FILE's bytes at KEY exactly, in every schedule; schedules "
                             "are kept apart by running each alone in an emptied local AWS (the template's "
                             "resources and --setup made again: about 0.12 s more per schedule). Without =KEY: "
                             "the file's name, one more folder checkNNNNN/ per schedule. A JSON order's order_id "
                             "gets the schedule's number. Repeatable: the check runs once per object; a second FILE at the "
                             "same KEY is a second order at that name (new bytes: needed for a file that is not a "
                             "JSON order). Default: "
                             "the check's own order file, {\"order_id\": ...} with a new order per schedule, at "
                             "checkNNNNN/order-1.json (docs/one_charge_per_order.md)")
    parser.add_argument("--setup", default=None, metavar="MODULE:FUNCTION",
                        help="your own set-up, run once on the check's AWS before the clean run: FUNCTION "
                             "gets a boto3 Session there and creates what the handler needs (topics, "
                             "tables, queues, identities); a dict it returns is added to the handler's "
                             "environment (under --env)")
    parser.add_argument("--trigger", choices=TRIGGERS, default=None,
                        help="what feeds the function: s3 (S3 invokes it asynchronously; the default), "
                             "sqs (an SQS event source mapping: batches, batchItemFailures, the "
                             "visibility timeout, maxReceiveCount and the dead-letter queue), or "
                             "eventbridge (S3's Object Created events through EventBridge, asynchronously)")
    parser.add_argument("--ordering", choices=("none", "sequencer"), default="none",
                        help="the handler's declared ordering rule: sequencer, it keeps per object name the "
                             "upload with the greatest S3 sequencer and skips an older one on purpose, so an "
                             "order with a newer upload of the same name may have no write or other named "
                             "effect of its own, never a charge (the final state must still be the newest "
                             "upload's); none (default): every order has each named effect")
    parser.add_argument("--retries", default=None,
                        help="the MaximumRetryAttempts values to try, from 0,1,2 (default all; with --template, "
                             "the template's own); under --trigger sqs, maxReceiveCount is each value + 1")
    parser.add_argument("--provider-factory", default="make_provider",
                        help="the function your handler builds its payment client with; the check "
                             "replaces it with the provider stand-in (default make_provider)")
    parser.add_argument("--provider", choices=("stand-in", "stripe"), default="stand-in",
                        help="what the provider factory returns: the provider stand-in (default), or "
                             "Stripe's own SDK (keyed_stripe.py) aimed at a loopback Stripe with the same rules; "
                             "with stripe, a handler's own Stripe calls (stripe.PaymentIntent.create, "
                             "stripe.StripeClient) go to the loopback Stripe too; a handler whose module "
                             "imports stripe gets stripe by itself")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes to run schedules in (default: 2 where there are 2 cores)")
    parser.add_argument("--books", default=None, metavar="TABLE_ENV:ATTRIBUTE",
                        help="where the handler books its charges: items of the table named by "
                             "TABLE_ENV that carry ATTRIBUTE are ledger lines, weighed against the "
                             "provider's charges; the clean run must book there (default: "
                             "LEDGER_TABLE:charge_id, judged if the clean run books there; none to skip)")
    parser.add_argument("--budget", type=float, default=900.0, metavar="SECONDS",
                        help="real seconds the whole check may take before it gives up (exit 3; default "
                             "900); a handler that finishes no invocation for 90 s is given up on sooner")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON (docs/check-report.schema.json), errors too")
    parser.epilog = SCHEDULES


def run(args: argparse.Namespace) -> int:
    """Check in a child process the handler cannot end, hang or silence (`idem.explore.sandbox`);
    this process prints the answer, JSON under --json on every exit path."""
    from ..explore.report.schema import error_json  # no moto here: the child imports it
    from ..explore.sandbox import stripe_sdk
    from ..explore.sandbox.parent import STALL_SECONDS, Outcome, run_sandboxed
    from ..explore.target import lambda_env, requirements_cache
    from ..explore.target.handler_shape import handler_shape, refuse_shape

    try:
        given = dict(_pair(item) for item in args.env)
        retries = [_number(part) for part in (args.retries or "0,1,2").split(",") if part.strip()]
        effects = [_effect(name) for name in args.effect]
        for spec in args.objects:
            _object(spec)
        for spec in args.answer:
            _answer_file(spec)
        for path in args.python_path:
            if not os.path.isdir(path):
                raise UsageError(f"--python-path {path}: no such folder")
        if args.budget <= 0:
            raise UsageError(f"--budget takes a number of seconds above 0, got {args.budget}")
    except UsageError as bad:
        return _answer(args, Outcome(2, error_json(2, str(bad)), str(bad)))
    try:
        target, from_template = _target(args)
    except UsageError as bad:
        return _answer(args, Outcome(2, error_json(2, str(bad)), str(bad)))
    shape = handler_shape(target) if ":" in target else ""
    if shape:
        message = refuse_shape(target, shape)
        return _answer(args, Outcome(2, error_json(2, message), message))
    provider = args.provider if target in PATTERNS else stripe_sdk.provider_for(target, args.provider)
    root = lambda_env.task_root(target)
    env = given if target in PATTERNS else lambda_env.environment(
        target, root, template=from_template.env if from_template else None, given=given,
        **({"memory_mb": from_template.memory_mb} if from_template else {}))
    trigger = args.trigger or (from_template.trigger if from_template else "s3")
    if from_template and args.retries is None:  # the function as deployed: the template's retries
        from ..explore.target.deployed import Deployed

        retries = list(Deployed.of(from_template.deployed).retries(trigger))  # type: ignore[union-attr]
    try:
        python_path = [os.path.abspath(path) for path in args.python_path] + (requirements_cache.folders(
            root, from_template.layers if from_template else []) if args.install_requirements else [])
    except requirements_cache.RequirementsError as bad:
        return _answer(args, Outcome(2, error_json(2, str(bad)), str(bad)))
    request = {"target": target, "task_root": root, "objects": [_object(spec) for spec in args.objects],
               "answers": [_answer_file(spec) for spec in args.answer],
               "python_path": python_path,
               "setup": args.setup,
               "schedule_seconds": float(os.environ.get("IDEM_CHECK_SCHEDULE_SECONDS") or 0),
               "options": {"effects": effects, "env": env, "retries": retries,
                           "provider_factory": args.provider_factory, "workers": args.workers,
                           "books": args.books, "provider": provider, "trigger": trigger,
                           **({"ordering": args.ordering} if args.ordering != "none" else {})}}
    if from_template:
        request["template_resources"] = from_template.resources
        request["options"]["deployed"] = from_template.deployed
        request["upload_bucket"] = from_template.bucket if trigger == from_template.trigger else ""
        request["etags_not_md5"] = from_template.etags_not_md5 and trigger == from_template.trigger
        # the asynchronous trigger the check runs (S3's notification or an EventBridge rule): its key
        # filter, and the uploads it delivers (docs/check_from_a_template.md, P21 and P22)
        fed = next((t for t in from_template.triggers if t.kind == trigger and t.kind != "sqs"), None)
        request["key_filter"] = [fed.prefix, fed.suffix] if fed else ["", ""]
        request["delivered_by"] = from_template.delivered_by if fed else []
    # IDEM_CHECK_STALL_SECONDS: how long no invocation may finish (tests shorten it)
    stall = float(os.environ.get("IDEM_CHECK_STALL_SECONDS") or STALL_SECONDS)
    outcome = run_sandboxed(request, budget=args.budget, stall=stall)
    if args.install_requirements and outcome.exit_code in (0, 1):  # what the packages were installed for
        note = requirements_cache.platform_note(*((from_template.runtime, from_template.architectures)
                                                  if from_template else ()))
        outcome = replace(outcome, text=f"{outcome.text}\n{note}", json={**outcome.json, "requirements": note})
    return _answer(args, outcome)


def refuse_usage(message: str, as_json: bool = True) -> int:
    """A command line argparse refused: one line, "idem check: ...", as every error of the check
    says it; under --json, the schema's error object first. Exit 2."""
    from ..explore.report.schema import error_json

    if as_json:
        print(json.dumps(error_json(2, message), indent=2))
    print(f"idem check: {message}", file=sys.stderr)
    return 2


def _answer(args: argparse.Namespace, outcome: Any) -> int:
    """Print what the check answered: the report, or the handler's traceback and one line (an error
    whose text has line breaks, such as a handler's exception at import, flattened to one, in its
    JSON too)."""
    if outcome.exit_code not in (0, 1):
        text = " ".join(str(outcome.text).split())
        said = outcome.json.get("error") if isinstance(outcome.json, dict) else None
        outcome = replace(outcome, text=text, json={**outcome.json, "error": " ".join(said.split())}
                          if isinstance(said, str) else outcome.json)
    if args.json:
        print(json.dumps(outcome.json, indent=2))
    elif outcome.exit_code in (0, 1):
        print(outcome.text)
    else:
        if outcome.handler_traceback:
            print("the handler's own traceback:\n" + outcome.handler_traceback.rstrip(), file=sys.stderr)
        print(f"idem check: {outcome.text}", file=sys.stderr)
    return int(outcome.exit_code)


def _target(args: argparse.Namespace) -> tuple[str, Any]:
    """The handler to check: the positional target, or the template's function."""
    if (args.parameters or args.parameters_file) and not args.template:
        raise UsageError("--parameter and --parameters-file give --template's parameters: name the template")
    if args.template or args.function:
        if not (args.template and args.function):
            raise UsageError("--template and --function go together: the template, and the function's logical id in it")
        from ..explore.target.template_function import TemplateError, read

        from ..explore.target.template_parameters import ParameterError, from_file, pair

        try:
            given = from_file(args.parameters_file) if args.parameters_file else {}
            given.update(pair(item) for item in args.parameters)
            found = read(args.template, args.function, given, source=args.target)
        except (TemplateError, ParameterError) as bad:
            raise UsageError(str(bad)) from None
        return found.target, found
    if not args.target:
        raise UsageError("name the handler to check (FILE.py:FUNCTION or MODULE:FUNCTION), or "
                         "--template TEMPLATE --function LOGICAL_ID")
    return args.target, None


def _object(spec: str) -> str:
    """--object FILE[=KEY], checked here and with FILE made absolute for the child."""
    from ..explore.run.objects import BadObject, UserObject

    try:
        found = UserObject.parse(spec)
    except BadObject as bad:
        raise UsageError(str(bad)) from None
    return f"{found.path}={found.key}"


def _answer_file(spec: str) -> str:
    """--answer service:Operation=FILE, checked here, with FILE made absolute for the child."""
    from ..explore.sandbox.stand_ins import BadAnswer, parse

    try:
        parse(spec)
    except BadAnswer as bad:
        raise UsageError(str(bad)) from None
    call, _, path = spec.partition("=")
    return f"{call}={os.path.abspath(path)}"


def _effect(text: str) -> str:
    from ..explore.target.service_names import UnknownEffect, effect_name

    try:
        return effect_name(text)
    except UnknownEffect as unknown:
        raise UsageError(str(unknown)) from None


def _pair(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise UsageError(f"--env {item!r} is not NAME=VALUE")
    return name, value


def _number(part: str) -> int:
    try:
        return int(part)
    except ValueError:
        raise UsageError(f"--retries takes numbers from 0,1,2, got {part!r}") from None
