"""What `idem check --template` sets up in the check's process before the clean run: the
template's resources on the check's AWS (moto, once per check: every world the schedules run in
sees them), the bucket the trigger names as the one uploads land in, and keys its filter accepts
(`idem.explore.uploads`)."""
from __future__ import annotations

from typing import Any


class TemplateSetupFailed(Exception):
    """The template's resources could not be made, or an --object never reaches the function (exit 2)."""

    def __init__(self, message: str, handler_traceback: str = "") -> None:
        super().__init__(message)
        self.handler_traceback = handler_traceback


def prepare(request: dict[str, Any], objects: list[Any]) -> None:
    """Set up what `request` (the sandbox's) asks of the template, for `objects` (--object's)."""
    from . import uploads

    if request.get("template_resources"):
        create(request["template_resources"])
    if request.get("upload_bucket"):
        uploads.UPLOAD_BUCKET = request["upload_bucket"]
    prefix, suffix = request.get("key_filter") or ("", "")
    for obj in objects:
        refused = uploads.refuse_unfiltered(obj.key_for(1), prefix, suffix)
        if refused:
            raise TemplateSetupFailed(refused)
    if not objects:
        uploads.install_filter(prefix, suffix)


def create(resources: list[dict[str, Any]]) -> None:
    """The template's resources, made on the check's AWS with their names."""
    import boto3

    from ..sim.world import REGION, ensure_moto
    from .template_function import create as create_each

    ensure_moto()
    try:
        create_each(resources, boto3.Session(region_name=REGION))
    except Exception as error:
        # the check's own failure, not the handler's: no handler traceback
        raise TemplateSetupFailed(f"--template: creating its resources on the check's AWS failed: "
                                  f"{type(error).__name__}: {error}") from None
