"""Calls moto does not implement are answered by a stand-in and named in the report
(idem.explore.sandbox.stand_ins); a function's dependencies come from --python-path, and a missing one is
one line naming it, its requirements.txt and the option (idem.explore.target.dependencies)."""
from __future__ import annotations

import json

import pytest

from check_cli import cli, target


def test_a_service_moto_lacks_is_answered_and_named_never_blamed_on_the_import():
    code, out, err = cli(target("transcoder"), "--effect", "mediaconvert:CreateJob", "--retries", "1",
                         "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 1, err  # two jobs after a lost answer: its own break, not an import error
    assert report["stand_ins"] == {"mediaconvert:CreateJob": "its output shape",
                                   "mediaconvert:DescribeEndpoints": "its output shape"}
    assert report["baseline"]["mediaconvert:CreateJob"] == 1
    lost = next(r for r in report["results"]
                if r["schedule"] == "exception after mediaconvert:CreateJob on arrival 1; single; 1 retry")
    assert lost["verdict"] == "double_effect"


def test_the_users_answer_is_used_and_the_report_says_so(tmp_path):
    answer = tmp_path / "endpoints.json"
    answer.write_text(json.dumps({"Endpoints": [{"Url": "https://abcd1234.mediaconvert.us-east-1.amazonaws.com"}]}))
    code, out, _ = cli(target("transcoder"), "--effect", "mediaconvert:CreateJob", "--retries", "0",
                       "--workers", "1", "--answer", f"mediaconvert:DescribeEndpoints={answer}")
    assert code == 1
    assert ("stand-in answers (moto does not implement these calls; their effect on AWS is not modelled, each is "
            "counted as a call): mediaconvert:CreateJob (from its output shape), mediaconvert:DescribeEndpoints "
            "(from --answer)") in out


def test_a_bad_answer_file_is_one_line(tmp_path):
    (tmp_path / "a.json").write_text("[1]")
    code, out, _ = cli(target("transcoder"), "--answer", f"mediaconvert:CreateJob={tmp_path / 'a.json'}", "--json")
    assert code == 2 and "must hold a JSON object" in json.loads(out)["error"]
    code, out, _ = cli(target("transcoder"), "--answer", "CreateJob=x.json", "--json")
    assert code == 2 and "is not service:Operation=FILE" in json.loads(out)["error"]


def test_the_output_shape_answer_fills_what_a_caller_reads():
    import boto3

    from idem.explore.sandbox.stand_ins import shaped

    model = boto3.Session(region_name="us-east-1").client("mediaconvert").meta.service_model
    endpoints = shaped(model.operation_model("DescribeEndpoints").output_shape, "mediaconvert")
    assert endpoints["Endpoints"][0]["Url"] == "https://mediaconvert.us-east-1.amazonaws.com"
    job = shaped(model.operation_model("CreateJob").output_shape, "mediaconvert")["Job"]
    assert job["Arn"].startswith("arn:aws:mediaconvert:") and isinstance(job["Settings"], dict)


def _function(tmp_path):
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "app.py").write_text(
        "import hashlib\nimport order_lib\n\n\ndef make_provider():\n    raise RuntimeError\n\n\n"
        "def lambda_handler(event, context):\n    return order_lib.charge(make_provider(), event)\n")
    (tmp_path / "fn" / "requirements.txt").write_text("order-lib==1.0\n")
    (tmp_path / "deps").mkdir()
    (tmp_path / "deps" / "order_lib.py").write_text(
        "import hashlib\nfrom urllib.parse import unquote_plus\n\n\ndef charge(provider, event):\n"
        "    for record in event['Records']:\n        obj = record['s3']['object']\n"
        "        key = unquote_plus(obj['key'])\n"
        "        provider.charge(customer='acct-1', amount=500, currency='usd', reference=key,\n"
        "                        idempotency_key=hashlib.sha256((key + obj['eTag']).encode()).hexdigest())\n"
        "    return {'ok': True}\n")
    return f"{tmp_path / 'fn' / 'app.py'}:lambda_handler"


def test_a_missing_dependency_names_the_module_its_requirements_and_the_option(tmp_path):
    code, out, _ = cli(_function(tmp_path), "--retries", "0", "--workers", "1", "--json")
    message = json.loads(out)["error"]
    assert code == 2 and "\n" not in message
    assert message.startswith("the function imports order_lib, which is not installed where the check runs; its ")
    assert "requirements.txt lists order-lib==1.0" in message
    assert message.endswith("give --python-path DIR, or let the check install them once, into a cache: "
                            "--install-requirements")


def test_python_path_gives_the_function_its_dependencies(tmp_path):
    code, out, err = cli(_function(tmp_path), "--python-path", str(tmp_path / "deps"), "--retries", "0",
                         "--workers", "1", "--books", "none", "--json")
    report = json.loads(out)
    assert report["baseline"]["provider:charge"] == 1  # order_lib imported from --python-path: it charged
    # Its only guard is Stripe's key (the key and eTag): it held before the merge, and breaks only where
    # the money contract moved (test_check_handlers.MERGED_CONTRACT): the same order sent again past
    # Stripe's 24-hour key window is charged twice (late, again).
    broken = [r for r in report["results"] if r["verdict"] not in ("exactly_once", "failed_visibly", "needs_attention")]
    assert code == 1 and broken, err
    assert {r["verdict"] for r in broken} == {"double_charge"}, [(r["schedule"], r["verdict"]) for r in broken]
    assert all("past Stripe's 24-hour key window" in r["schedule"] or "3 days later" in r["schedule"]
               for r in broken), [r["schedule"] for r in broken]


def _wheel(folder, source):
    """order_lib as a wheel pip can install offline (a zip: the module and its dist-info)."""
    import zipfile

    folder.mkdir()
    with zipfile.ZipFile(folder / "order_lib-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("order_lib.py", source)
        info = "order_lib-1.0.dist-info/"
        wheel.writestr(info + "METADATA", "Metadata-Version: 2.1\nName: order-lib\nVersion: 1.0\n")
        wheel.writestr(info + "WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(info + "RECORD", f"order_lib.py,,\n{info}METADATA,,\n{info}WHEEL,,\n{info}RECORD,,\n")


def test_install_requirements_builds_the_functions_requirements_once_into_a_cache(tmp_path, monkeypatch):
    """docs/check_from_a_template.md P9: requirements.txt installed with pip as the machine
    configures it (here: no index, a folder of wheels) into a folder keyed by the file's hash, and
    reused: the second check runs with the wheels gone."""
    target = _function(tmp_path)
    _wheel(tmp_path / "wheels", (tmp_path / "deps" / "order_lib.py").read_text())
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.setenv("IDEM_CHECK_CACHE", str(tmp_path / "cache"))
    from idem.explore.target.requirements_cache import key_of

    folder = tmp_path / "cache" / "requirements" / key_of(tmp_path / "fn" / "requirements.txt")
    for _ in range(2):
        code, out, err = cli(target, "--install-requirements", "--retries", "0", "--workers", "1",
                             "--books", "none", "--json")
        assert json.loads(out)["baseline"]["provider:charge"] == 1, (out, err)  # order_lib imported: it charged
        assert (folder / "order_lib.py").is_file() and (folder / ".idem-complete").is_file()
        import shutil

        shutil.rmtree(tmp_path / "wheels", ignore_errors=True)  # the second check: from the cache alone


def test_a_requirement_pip_cannot_install_is_one_line_naming_the_requirement_the_file_and_the_option(
        tmp_path, monkeypatch):
    """docs/check_from_a_template.md P10: offline here (no index, find-links with nothing in it),
    the one line names the requirement, its file, why, pip's reason and --python-path."""
    target = _function(tmp_path)
    (tmp_path / "fn" / "requirements.txt").write_text("no-such-lib-for-idem==9.9\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("IDEM_CHECK_CACHE", str(tmp_path / "cache"))
    code, out, _ = cli(target, "--install-requirements", "--retries", "0", "--json")
    message = json.loads(out)["error"]
    assert code == 2 and "\n" not in message
    assert message.startswith(f"--install-requirements: pip could not install requirement no-such-lib-for-idem==9.9 "
                              f"of {tmp_path / 'fn' / 'requirements.txt'}: neither the index nor the find-links pip is "
                              "configured with has it (ERROR: ")
    assert message.endswith("give --python-path DIR")
    assert not list((tmp_path / "cache" / "requirements").iterdir())  # nothing half-made is kept


def test_an_index_that_does_not_answer_is_named_offline_and_an_unwritable_cache_is_one_line(tmp_path, monkeypatch):
    """P10: pip's own words for an index it could not reach (as it prints them on each retry) are
    read as offline; a cache folder that cannot be made is one line naming IDEM_CHECK_CACHE, never a
    traceback."""
    from idem.explore.target.requirements_cache import RequirementsError, installed, refusal

    pip_said = ("WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after "
                "connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object>: "
                "Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': "
                "/simple/pillow/\n"
                "ERROR: Could not find a version that satisfies the requirement pillow==11.0.0 (from versions: none)\n"
                "ERROR: No matching distribution found for pillow==11.0.0\n")
    line = refusal(tmp_path / "requirements.txt", pip_said)
    assert line.startswith(f"--install-requirements: pip could not install requirement pillow==11.0.0 of "
                           f"{tmp_path / 'requirements.txt'}: no package index answered from here (offline) (ERROR: ")
    (tmp_path / "requirements.txt").write_text("order-lib==1.0\n")
    (tmp_path / "file").write_text("")
    with pytest.raises(RequirementsError) as refused:
        installed(tmp_path / "requirements.txt", tmp_path / "file" / "cache")  # under a file: cannot be made
    assert "\n" not in str(refused.value) and "set IDEM_CHECK_CACHE to a folder you can write" in str(refused.value)


def test_the_report_says_which_platform_the_requirements_were_installed_for(tmp_path, monkeypatch):
    """P9: the packages are installed for the Python that runs the function here (host wheels);
    the report says so, beside the Runtime and Architectures Lambda runs it on (the template's)."""
    from idem.explore.target.requirements_cache import host

    _function(tmp_path)
    _wheel(tmp_path / "wheels", (tmp_path / "deps" / "order_lib.py").read_text())
    (tmp_path / "template.yaml").write_text(
        "Transform: AWS::Serverless-2016-10-31\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n"
        "    Properties:\n      Runtime: python3.12\n      CodeUri: fn\n      Handler: app.lambda_handler\n"
        "      Architectures: [arm64]\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.setenv("IDEM_CHECK_CACHE", str(tmp_path / "cache"))
    code, out, err = cli("--template", str(tmp_path / "template.yaml"), "--function", "Fn", "--install-requirements",
                         "--retries", "0", "--workers", "1", "--books", "none", "--json")
    report = json.loads(out)
    assert report["baseline"]["provider:charge"] == 1, (out, err)
    assert report["requirements"].startswith(f"requirements: installed for {host()}, the Python that runs the "
                                             "function here; Lambda runs it on python3.12 on arm64 (Linux)")
    from idem.explore.target.requirements_cache import platform_note

    assert "Lambda runs it on the Runtime and Architectures it is deployed with" in platform_note()  # no template


def test_a_layer_of_the_template_gives_its_python_folder(tmp_path):
    """A LayerVersion in the template: its ContentUri's python/ folder (as Lambda's /opt/python)."""
    from idem.explore.target.requirements_cache import folders
    from idem.explore.target.template_function import read

    (tmp_path / "layer" / "python").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def handler(event, context):\n    return {}\n")
    (tmp_path / "template.yaml").write_text(
        "Transform: AWS::Serverless-2016-10-31\nResources:\n  Libs:\n    Type: AWS::Serverless::LayerVersion\n"
        "    Properties:\n      ContentUri: layer\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n"
        "      Runtime: python3.12\n      CodeUri: src\n      Handler: app.handler\n      Layers:\n        - !Ref Libs\n"
        "        - arn:aws:lambda:us-east-1:123456789012:layer:shared:3\n")
    found = read(str(tmp_path / "template.yaml"), "Fn")
    assert found.layers == [str(tmp_path / "layer"), "arn:aws:lambda:us-east-1:123456789012:layer:shared:3"]
    assert folders(str(tmp_path / "src"), found.layers[:1]) == [str(tmp_path / "layer" / "python")]
    import pytest as _pytest
    from idem.explore.target.requirements_cache import RequirementsError

    with _pytest.raises(RequirementsError, match="named by its ARN, which the check cannot read: unpack its python/"):
        folders(str(tmp_path / "src"), found.layers)
