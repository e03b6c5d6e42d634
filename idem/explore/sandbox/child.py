"""The sandbox's child process: runs `check_handler` as the parent's request asks (the function's
folder and layers on sys.path, its /tmp, its stand-ins, --object, --template, --setup) and writes
its answer to a file for the parent."""
from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

from ..report.schema import error_json
from ..target import dependencies
from .clean_run import CleanRun
from .guard import Guard


def child_main(request_path: str, fd: int) -> None:
    request = json.loads(Path(request_path).read_text())
    guard = Guard(fd, request["task_root"])
    answer: dict[str, Any]
    try:
        answer = _run_check(request, guard)
    except BaseException as error:  # the check itself failed: a tool error, never a verdict
        if shadowed := dependencies.shadowed_message(request["task_root"]):  # its own module in place of the check's
            message = f"{shadowed} (the check failed: {type(error).__name__}: {error})"
            answer = {"exit_code": 2, "text": message, "json": error_json(2, message)}
        else:
            message = (f"idem check itself failed ({type(error).__name__}: {error}); this is a bug in idem, "
                       "not a verdict on the handler")
            answer = {"exit_code": 3, "text": message, "handler_traceback": traceback.format_exc(),
                      "json": error_json(3, message, traceback.format_exc())}
    left = guard.left_running()
    if left and answer["exit_code"] in (0, 1):
        thread, where = left[0]
        message = (f"the handler started a non-daemon thread ({thread.name}, at {where}) that is still running "
                   "after every invocation returned: on Lambda it is frozen with the execution environment and "
                   "runs on inside later invocations "
                   "(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), so its work "
                   "belongs to no invocation and the check cannot judge it; join the thread before returning")
        answer = {"exit_code": 3, "text": message, "json": error_json(3, message)}
    temporary = Path(request["answer"] + ".part")
    temporary.write_text(json.dumps(answer))
    temporary.replace(request["answer"])
    sys.stdout.flush()
    sys.stderr.flush()
    guard.real_exit(0)  # now: a normal exit would wait for the non-daemon threads the handler left


def _run_check(request: dict[str, Any], guard: Guard) -> dict[str, Any]:
    try:
        from .. import check
    except ModuleNotFoundError as missing:
        message = (f"idem check needs {missing.name}, from the package's check extra: install it with "
                   "pip install '<path to this repository or its wheel>[check]'")
        return {"exit_code": 2, "text": message, "json": error_json(2, message)}
    from ..errors import CheckInputError
    from ..report.check_report import CheckReport, error_json as report_error
    from ..run import objects, runner
    from ..target import template_run
    from . import lambda_tmp, stand_ins

    root = request["task_root"]
    # Lambda: the function's folder first on sys.path (its packages import). The working
    # directory stays where the check was started, so the target reads as it was given.
    sys.path.insert(0, root)
    dependencies.add_paths(request.get("python_path", []))  # --python-path: its packages, its layers
    guard.install()
    lambda_tmp.install([root, *request.get("python_path", [])], base=str(Path(request["answer"]).parent))  # each execution environment's own /tmp, removed after each batch
    stand_ins.setup(request.get("answers", []), CheckReport)  # calls moto lacks: answered, and named
    if request["options"].get("provider") == "stripe":  # Stripe's SDK, called directly too
        from .stripe_sdk import aim_sdk_at_loopback

        aim_sdk_at_loopback()
    if request.get("schedule_seconds"):
        runner.SCHEDULE_SECONDS = float(request["schedule_seconds"])
    options = dict(request["options"])
    try:
        uploads = objects.paired([objects.UserObject.parse(spec) for spec in request.get("objects", [])])
        template_run.prepare(request, uploads, _run_setup)  # --template: its resources, bucket and key filter
        if request.get("setup"):
            options["env"] = {**_run_setup(request["setup"]), **options["env"]}
    except (objects.BadObject, SetupFailed, template_run.TemplateSetupFailed) as bad:
        return {"exit_code": 2, "text": str(bad), "handler_traceback": getattr(bad, "handler_traceback", ""),
                "json": error_json(2, str(bad), getattr(bad, "handler_traceback", ""))}
    clean = CleanRun(runner)
    answers = []
    for upload in uploads or [None]:
        if upload is not None:
            objects.install(upload)
        clean.missing = None
        try:
            report = check.check_handler(request["target"], **options)
            if clean.resource_missing(report):  # the clean run failed on a resource that is nowhere:
                raise CheckInputError("the handler fails on a clean run")  # input, not a break
        except CheckInputError as error:
            message = dependencies.explain(clean.explain(error), root, request.get("python_path", []))
            if "fails at import" in message and (shadowed := dependencies.shadowed_message(root)):
                message = f"{message}. {shadowed}"
            if upload is not None and len(uploads) > 1:
                message = f"--object {upload.path}: {message}"
            error.args = (message,)
            return {"exit_code": error.exit_code, "text": message, "handler_traceback": error.handler_traceback,
                    "json": report_error(error)}
        answer = report.to_json()
        if upload is not None:
            answer["object"] = {"file": upload.path, "key": upload.key}
        text = report.explain() if upload is None else f"--object {upload.path} (as {upload.key}):\n{report.explain()}"
        answers.append((report.holds, text, answer))
    json_answer = next((a for holds, _, a in answers if not holds), answers[-1][2])
    if len(answers) > 1:
        json_answer = {**json_answer, "objects": [{**a["object"], "holds": holds} for holds, _, a in answers]}
    holds = all(h for h, _, _ in answers)
    return {"exit_code": 0 if holds else 1, "text": "\n\n".join(t for _, t, _ in answers), "json": json_answer}


class SetupFailed(Exception):
    """The team's --setup function failed or is not there (exit 2)."""

    def __init__(self, message: str, handler_traceback: str = "") -> None:
        super().__init__(message)
        self.handler_traceback = handler_traceback


def _run_setup(spec: str) -> dict[str, str]:
    """Run `--setup MODULE:FUNCTION` once on the check's AWS (moto, before any world), given a
    boto3 Session there; a dict it returns is added to the handler's environment (under --env)."""
    import importlib
    import importlib.util

    import boto3

    from ...sim.world import REGION, ensure_moto

    module_name, sep, function = spec.rpartition(":")
    if not sep or not module_name or not function:
        raise SetupFailed(f"--setup {spec!r} is not MODULE:FUNCTION or FILE.py:FUNCTION")
    ensure_moto()
    try:
        if module_name.endswith(".py"):
            found = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if found is None or found.loader is None or not Path(module_name).is_file():
                raise SetupFailed(f"--setup {spec}: no file {module_name}")
            module = importlib.util.module_from_spec(found)
            found.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        made = getattr(module, function)(boto3.Session(region_name=REGION))
    except SetupFailed:
        raise
    except Exception as error:
        missing = getattr(error, "name", None) if isinstance(error, ModuleNotFoundError) else None
        if missing and (module_name == missing or module_name.startswith(missing + ".")):  # the set-up's own module
            raise SetupFailed(f"--setup {spec}: cannot find module {missing}: --setup takes MODULE:FUNCTION "
                              "(a module on PYTHONPATH: run from its folder) or FILE.py:FUNCTION") from None
        raise SetupFailed(f"--setup {spec} failed: {type(error).__name__}: {error}", traceback.format_exc()) from None
    if made is None:
        return {}
    if not isinstance(made, dict) or not all(isinstance(k, str) for k in made):
        raise SetupFailed(f"--setup {spec} returned {type(made).__name__}: return None, or a dict of "
                          "settings for the handler's environment")
    return {k: str(v) for k, v in made.items()}
