"""Real AWS only on purpose: `deploy --target aws` asks for --yes and a region, `redrive --queue-url`
for a region (it reads first, and sends only after a yes: tests/test_redrive_audit.py), and answer missing credentials, a missing region or an endpoint that does not answer
in one line, exit code 2, well within 30 s. Nothing here connects anywhere but loopback."""
from __future__ import annotations

import socket
import time

import pytest

from idem.deploy.aws import connect
from test_deploy_server import loopback_only, machine_free_aws_env, one_error_line, run_cli


@pytest.fixture
def offline(monkeypatch, tmp_path):
    machine_free_aws_env(monkeypatch, tmp_path, AWS_ACCESS_KEY_ID="testing",
                         AWS_SECRET_ACCESS_KEY="testing")
    escaped = loopback_only(monkeypatch)
    yield monkeypatch
    assert escaped == [], "something tried to leave the machine"


def _redrive(*argv: str) -> tuple[int, str, str]:
    return run_cli("redrive", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/1/q",
                   "--function", "idem-prod-charge", *argv)


def test_redrive_of_a_real_queue_reads_it_first_even_without_yes_so_it_wants_a_region(offline):
    code, out, err = _redrive()
    assert (code, out) == (2, "") and one_error_line(err).startswith("error: no AWS region: pass --region")


def test_redrive_wants_a_region(offline):
    code, _, err = _redrive("--yes")
    assert code == 2 and one_error_line(err).startswith("error: no AWS region: pass --region")


def test_redrive_without_credentials_says_how_to_get_them(offline):
    offline.delenv("AWS_ACCESS_KEY_ID")
    offline.delenv("AWS_SECRET_ACCESS_KEY")
    code, _, err = _redrive("--yes", "--region", "eu-west-1")
    assert code == 2 and one_error_line(err).startswith("error: no AWS credentials found")


def _closed_port() -> str:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.concurrency
def test_redrive_to_an_unreachable_endpoint_is_one_line(offline):
    closed = _closed_port()
    offline.setenv("AWS_ENDPOINT_URL", closed)
    started = time.monotonic()
    code, _, err = _redrive("--yes", "--region", "eu-west-1")
    assert code == 2 and time.monotonic() - started < 30
    assert one_error_line(err).startswith(f"error: could not reach {closed}/")


def test_options_for_a_real_queue_are_refused_without_one(offline):
    code, _, err = run_cli("redrive", "--yes")
    assert code == 2 and "--yes, --region and --profile go with --queue-url" in err


def test_the_probe_gives_up_within_30_seconds_at_worst():
    attempts = connect.PROBE.retries["total_max_attempts"]
    assert (connect.PROBE.connect_timeout + connect.PROBE.read_timeout) * attempts <= 30
    assert connect.CLIENTS.connect_timeout <= 10


@pytest.mark.concurrency
def test_an_endpoint_that_accepts_and_never_answers_ends_in_one_line(offline, monkeypatch):
    """A silent server (the connection is accepted, nothing is ever sent back) is what a
    firewall or a wrong proxy looks like; the probe's read timeout ends it."""
    from botocore.config import Config

    monkeypatch.setattr(connect, "PROBE", Config(connect_timeout=1, read_timeout=1,
                                                 retries={"total_max_attempts": 1}))
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        offline.setenv("AWS_ENDPOINT_URL", url)
        started = time.monotonic()
        code, _, err = run_cli("deploy", "--target", "aws", "--yes", "--region", "us-east-1")
        # The probe's 1 s read timeout ends it; the clients' (connect.CLIENTS) 60 s, botocore's
        # default too (https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html),
        # would not. The bound sits between, far from both: a busy machine's slower start cannot
        # fail it (make test-load runs it with every core busy).
        assert code == 2 and time.monotonic() - started < 45
    assert one_error_line(err).startswith(f"error: could not reach {url}/")
