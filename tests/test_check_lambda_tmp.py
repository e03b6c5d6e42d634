"""Each execution environment has its own /tmp in the check, as on Lambda, and the check leaves
none of it behind (idem.explore.lambda_tmp)."""
from __future__ import annotations

import json
import os

from check_cli import cli, target


def _markers() -> set[str]:
    return {name for name in os.listdir("/tmp") if name.startswith("charged-")}


def test_a_marker_in_tmp_does_not_stop_a_copy_served_by_another_environment():
    """tmp_marker skips an upload whose marker file is in /tmp. A copy that starts after the first
    invocation wrote its marker runs in a new environment (the first is busy), whose /tmp is empty on
    Lambda: it charges again. With one /tmp for all environments that schedule was exactly_once."""
    before = _markers()
    code, out, err = cli(target("tmp_marker"), "--retries", "0", "--workers", "1", "--json")
    assert code == 1, err
    verdicts = {r["schedule"]: r["verdict"] for r in json.loads(out)["results"]}
    assert verdicts["no fault; a copy starts after dynamodb:PutItem; 0 retries"] == "double_charge"
    # S3's duplicate 5 s later lands in the same (warm) environment, which keeps its /tmp: skipped
    assert verdicts["no fault; duplicate; 0 retries"] == "exactly_once"
    assert _markers() == before  # nothing left in the host's /tmp
    assert not [n for n in os.listdir("/tmp") if n.startswith("idem-lambda-tmp-")]  # in the scratch folder


def test_paths_under_tmp_map_to_the_running_environment_only():
    from idem.explore import lambda_tmp

    lambda_tmp._keep[:] = ["/tmp/code"]
    assert lambda_tmp.mapped("/tmp/x") == "/tmp/x"  # no environment running: the host's
    lambda_tmp._stack.append("/tmp/idem-lambda-tmp-1/env1")
    try:
        assert lambda_tmp.mapped("/tmp/x/y.jpeg") == "/tmp/idem-lambda-tmp-1/env1/x/y.jpeg"
        assert lambda_tmp.mapped("/tmp") == "/tmp/idem-lambda-tmp-1/env1"
        assert lambda_tmp.mapped("/tmp/code/app.py") == "/tmp/code/app.py"  # the function's own code
        assert lambda_tmp.mapped("/tmpfoo") == "/tmpfoo" and lambda_tmp.mapped("/var/task/a") == "/var/task/a"
        assert lambda_tmp.mapped(3) == 3  # a file descriptor
    finally:
        lambda_tmp._stack.clear()
        lambda_tmp._keep.clear()
