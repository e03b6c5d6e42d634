"""What `idem check --template` sets up in the check's process before the clean run: the
template's resources on the check's AWS (moto, once per check: every world the schedules run in
sees them), the bucket the trigger names as the one uploads land in, and keys its filter accepts
(`idem.explore.run.uploads`)."""
from __future__ import annotations

from typing import Any


class TemplateSetupFailed(Exception):
    """The template's resources could not be made, or an --object never reaches the function (exit 2)."""

    def __init__(self, message: str, handler_traceback: str = "") -> None:
        super().__init__(message)
        self.handler_traceback = handler_traceback


def prepare(request: dict[str, Any], objects: list[Any], run_setup: Any = None) -> None:
    """Set up what `request` (the sandbox's) asks of the template, for `objects` (--object's).
    `run_setup`: how --setup runs (made again for each schedule with an exact --object KEY)."""
    from ..run import uploads

    if request.get("template_resources"):
        create(request["template_resources"])
    if request.get("upload_bucket"):
        uploads.UPLOAD_BUCKET = request["upload_bucket"]
    prefix, suffix = request.get("key_filter") or ("", "")
    uploads.KEY_PREFIX, uploads.KEY_SUFFIX = prefix, suffix
    uploads.DELIVERED_BY = tuple(request.get("delivered_by") or ())
    uploads.ETAGS_NOT_MD5 = bool(request.get("etags_not_md5"))  # the template's bucket encrypts with a KMS key
    for obj in objects:
        refused = uploads.refuse_unfiltered(obj.key_for(1), prefix, suffix)
        if refused:
            raise TemplateSetupFailed(refused)
    if not objects:
        uploads.install_filter(prefix, suffix)
    if any(obj.exact for obj in objects):  # --object FILE=KEY: each schedule in an emptied account
        from ..run import exact_keys, runner

        exact_keys.install(runner)
        if request.get("template_resources"):
            exact_keys.on_fresh_account(lambda: create(request["template_resources"], shared=True))
        if request.get("setup") and run_setup is not None:  # its settings were read the first time
            exact_keys.on_fresh_account(lambda: run_setup(request["setup"]))


def create(resources: list[dict[str, Any]], shared: bool = False) -> None:
    """The template's resources, made on the check's AWS with their names. `shared`: with the
    process's one session (made again for each schedule: a new session loads botocore's models
    anew, about 0.4 s)."""
    import boto3

    from ...sim.world import REGION, ensure_moto
    from .template_function import create as create_each

    ensure_moto()
    try:
        create_each(resources, _SharedClients() if shared else boto3.Session(region_name=REGION))
    except Exception as error:
        # the check's own failure, not the handler's: no handler traceback
        raise TemplateSetupFailed(f"--template: creating its resources on the check's AWS failed: "
                                  f"{type(error).__name__}: {error}") from None


class _SharedClients:
    """A session-like object whose clients are the process's shared ones (`fake_client`)."""

    def client(self, service: str) -> Any:
        from ...sim.world import fake_client

        return fake_client(service)
