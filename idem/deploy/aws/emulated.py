"""`--target aws` pointed at a moto server: what AWS would do that moto does not, done here.

boto3 sends every call to the endpoint it is configured with, and botocore reads that from
AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_<SERVICE>, or endpoint_url in the config file):
https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html. The feature
shipped with AWS CLI 1.29.0, which is built on botocore 1.31.0 (the AWS blog post "New:
Improved flexibility when configuring endpoint URLs with the AWS SDKs and tools" asks for
AWS CLI 1.29.0 or later; copy read at https://www.amazonaws.cn/en/blog-selection/new-improved-flexibility-when-configuring-endpoint-urls-with-the-aws-sdks-and-tools/),
and botocore/configprovider.py reads AWS_ENDPOINT_URL in the 1.44 this project pins. So the
real-AWS code runs unchanged against a moto server on this machine. moto, though, leaves
out three things AWS does, and this module supplies them, saying so:

- the SAM transform: moto's CloudFormation ignores it, so it is expanded here first;
- settings moto's CloudFormation drops (versioning, notification, TTL, event-invoke config):
  set with the boto3 call a person would make (idem.deploy.aws_rules.gaps);
- running the function: moto runs Lambda code only inside docker. Here idem.sim.runtime
  runs idem.core.entry in this process, with the deployed function's environment and async
  settings, against the server's own bucket, tables and queue, on a virtual clock.

Only a loopback endpoint that answers moto's own /moto-api/config is treated as moto.
"""
from __future__ import annotations

import ipaddress
import json
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from ...core.clock import Clock, iso8601
from ...core.provider import Provider
from ...core.events import S3Object, s3_event

SIMULATED = ("SIMULATED: moto runs Lambda code only in docker, so idem.core.entry ran in this "
             "process with the deployed function's environment and retry settings, against "
             "the server's tables and queue")


def is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_moto(url: str, timeout: float = 2.0) -> bool:
    """True for a moto server on this machine (AWS has no /moto-api/). Nothing else is asked."""
    if not is_loopback(url):
        return False
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(f"{url.rstrip('/')}/moto-api/config", timeout=timeout) as answer:
            config = json.load(answer)
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "lambda" in config


def function_settings(lam: Any, name: str) -> dict[str, Any]:
    """What the deployed function is: its environment and its async-invoke config."""
    config = lam.get_function_configuration(FunctionName=name)
    invoke = lam.get_function_event_invoke_config(FunctionName=name, Qualifier="$LATEST")
    return {"name": name, "env": config["Environment"]["Variables"],
            "timeout": config["Timeout"], "handler": config["Handler"],
            "retries": invoke["MaximumRetryAttempts"],
            "max_event_age": invoke["MaximumEventAgeInSeconds"],
            "on_failure": invoke["DestinationConfig"]["OnFailure"]["Destination"]}


def attempt_lines(attempts: list[Any]) -> list[str]:
    """One line per invocation the local runtime made, on its virtual clock."""
    return [f"t={a.start:>5.0f}s attempt {a.attempt}: {a.outcome}"
            + (f" ({a.error.split(':')[0]})" if a.error else "") for a in attempts]


def s3_object(bucket: str, key: str, size: int, put: dict[str, Any], clock: Clock, n: int,
              region: str) -> S3Object:
    """The ObjectCreated record S3 sends for this put_object (moto's own lacks versionId and
    sequencer). Sequencers are hex and grow with each event for a key."""
    return S3Object(bucket=bucket, key=key, size=size, etag=put["ETag"].strip('"'),
                    sequencer=f"{int(clock.now() * 1000):012X}{n:06X}",
                    version_id=put.get("VersionId"), event_time=iso8601(clock.now()),
                    region=region)


@dataclass
class EndpointWorld:
    """What the local runtime needs of a world: a session for the function's clients, the
    failure queue for Lambda's invocation records, and the clock."""

    session: Any
    sqs: Any
    queue_url: str
    clock: Any
    prefix: str = "endpoint"
    runtimes_started: int = 0
    provider_table: str = ""

    def function_session(self) -> Any:
        """The function's session: watched at its boundaries, aimed where boto3's settings
        aim it (the emulator's AWS_ENDPOINT_URL)."""
        from ...sim.sessions import WatchedSession

        return WatchedSession(self.session.region_name)

    def send_to_queue(self, queue_url: str, body: str) -> None:
        """Lambda's invocation record into the stack's failure queue, through SendMessage."""
        self.sqs.send_message(QueueUrl=queue_url, MessageBody=body)

    def provider(self, clock: Any) -> Any:
        """The provider stand-in over the stack's provider table, on the runtime's clock."""
        return Provider(self.session.client("dynamodb"), self.provider_table, clock)


def run_function(session: Any, clients: dict[str, Any], outputs: dict[str, str], obj: S3Object,
                 world: EndpointWorld, seed: int = 0) -> list[Any]:
    """Deliver the upload's event to the deployed function, as S3 and Lambda would."""
    from ...sim.boundary import local_entry  # moto-side code: only on an emulator
    from ...sim.faults import FaultPlan
    from ...sim.runtime import LocalLambda

    fn = function_settings(clients["lambda"], outputs["FunctionName"])
    if fn["on_failure"] != outputs["FailureQueueArn"]:
        raise RuntimeError("the function's on-failure destination is not the stack's queue")
    world.provider_table = fn["env"]["PROVIDER_TABLE"]
    runtime = LocalLambda(world, fn["env"], fault=FaultPlan.from_demo_settings(fn["env"]),
                          retries=fn["retries"], timeout=fn["timeout"],
                          max_event_age=fn["max_event_age"], function_name=fn["name"],
                          entry=local_entry(fn["handler"]), seed=seed)
    runtime.send(s3_event(obj))
    return runtime.run()
