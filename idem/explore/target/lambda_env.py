"""What a Python function finds on Lambda before its code runs: its folder first on `sys.path`,
the working directory there, and the runtime's reserved environment variables.

The reserved variables are Lambda's "defined runtime environment variables"
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime):
`_HANDLER`, `AWS_REGION`, `AWS_DEFAULT_REGION`, `AWS_EXECUTION_ENV` (`AWS_Lambda_python3.x`),
`AWS_LAMBDA_FUNCTION_NAME`, `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, `AWS_LAMBDA_FUNCTION_VERSION`,
`AWS_LAMBDA_INITIALIZATION_TYPE`, `AWS_LAMBDA_LOG_GROUP_NAME`, `AWS_LAMBDA_LOG_STREAM_NAME`,
`LAMBDA_TASK_ROOT` (the function's code) and `LAMBDA_RUNTIME_DIR`, and the unreserved `TZ`
(`:UTC`), which a function may set to its own zone (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars-runtime.html):
its local time then follows it (`idem.sim.runtime.on_lambda.as_lambda` calls `time.tzset`). The access keys
(`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) are moto's here, set by moto
itself. A template's `Environment` and `--env` come on top (Lambda refuses to let a function set
the reserved ones; the check lets `--env` do it, for a handler that must see another value).
"""
from __future__ import annotations

import sys
from pathlib import Path

#: The local runtime's settings, as `idem.sim.runtime.LocalLambda` and its context carry them.
FUNCTION_NAME = "idem-charge"
MEMORY_MB = 256
TIMEOUT_SECONDS = 30
REGION = "us-east-1"
LOG_STREAM = "2026/01/01/[$LATEST]local"


def handler_setting(target: str) -> str:
    """Lambda's Handler setting (`_HANDLER`) for a target: `file.function` or `package.module.function`."""
    module, _, function = target.rpartition(":")
    if module.endswith(".py"):
        module = Path(module).stem
    return f"{module}.{function}"


def task_root(target: str, cwd: str | None = None) -> str:
    """The function's folder (`LAMBDA_TASK_ROOT`): a .py file's own folder, else where you stand."""
    module = target.rpartition(":")[0]
    if module.endswith(".py"):
        return str(Path(module).resolve().parent)
    return str(Path(cwd or ".").resolve())


def reserved(target: str, root: str, *, function_name: str = FUNCTION_NAME, memory_mb: int = MEMORY_MB,
             region: str = REGION) -> dict[str, str]:
    """The reserved variables Lambda's Python runtime sets, for the function at `root`."""
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return {
        "_HANDLER": handler_setting(target),
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{python}",
        "AWS_LAMBDA_FUNCTION_NAME": function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function_name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": LOG_STREAM,
        "LAMBDA_TASK_ROOT": root,
        "LAMBDA_RUNTIME_DIR": "/var/runtime",
        "TZ": ":UTC",
    }


def environment(target: str, root: str, *, template: dict[str, str] | None = None,
                given: dict[str, str] | None = None, **settings: object) -> dict[str, str]:
    """The handler's environment: Lambda's reserved variables, then the template's, then `--env`."""
    return {**reserved(target, root, **settings), **(template or {}), **(given or {})}  # type: ignore[arg-type]
