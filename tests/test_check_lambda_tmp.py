"""Each execution environment has its own /tmp in the check, as on Lambda, and the check leaves
none of it behind (idem.explore.sandbox.lambda_tmp)."""
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
    from idem.explore.sandbox import lambda_tmp

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


def test_a_python_installed_under_tmp_reads_its_own_files_while_the_handler_runs(tmp_path, monkeypatch):
    """CI machines and Binder's rehearsal keep a venv under /tmp. The library a handler imports
    reads its data files from there (botocore's endpoints.json, at the first boto3.client):
    they are the host's install, not the function's /tmp, and are read where they are. Before,
    every handler that made a client at import failed there with DataNotFoundError."""
    site = tmp_path / "site-packages"
    (site / "tmp_site_data").mkdir(parents=True)
    (site / "tmp_site_data" / "data.json").write_text('{"region": "us-east-1"}')
    (site / "tmp_site_data" / "__init__.py").write_text(
        "import json, os\n"
        "def load():\n"
        "    with open(os.path.join(os.path.dirname(__file__), 'data.json')) as f:\n"
        "        return json.load(f)\n")
    code_folder = tmp_path / "code"
    code_folder.mkdir()
    (code_folder / "app.py").write_text(
        "import os\nimport boto3\nimport tmp_site_data\n"
        "SETTINGS = tmp_site_data.load()  # at import, as boto3.client reads endpoints.json\n"
        "TABLE = os.environ['LEDGER_TABLE']\n\n"
        "def lambda_handler(event, context):\n"
        "    for record in event['Records']:\n"
        "        boto3.client('dynamodb').put_item(TableName=TABLE, Item={\n"
        "            'pk': {'S': record['s3']['object']['key']}, 'region': {'S': tmp_site_data.load()['region']}})\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.syspath_prepend(str(site))
    code, out, err = cli(f"{code_folder / 'app.py'}:lambda_handler", "--retries", "0", "--workers", "1",
                         "--effect", "dynamodb:PutItem")
    assert "fails at import" not in out + err and "FileNotFoundError" not in out + err, out + err
    assert code in (0, 1), out + err
