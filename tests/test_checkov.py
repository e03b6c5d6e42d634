"""checkov 3.3 on template.yaml and on the template after the SAM transform (what
CloudFormation creates): no failed check. Each finding the stack does not fix is skipped in
the resource's Metadata (checkov's `checkov: skip:` list) with its reason, and this test holds
every skip to having one. Runs when `make checkov` has installed it in .venv-checkov; CI
(.ci/run) installs it and sets IDEM_REQUIRE_CHECKOV=1, so there a missing checkov fails."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from idem.deploy import template as tp

ROOT = Path(__file__).resolve().parent.parent
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
PROFILES = {"prod": {"Profile": "prod", "AlarmEmail": "ops@example.com"}, "demo": {"Profile": "demo"}}


def _checkov(path: Path) -> dict:
    if not CHECKOV.exists():
        if os.environ.get("IDEM_REQUIRE_CHECKOV"):
            pytest.fail("checkov is not installed in .venv-checkov (`make checkov`)")
        pytest.skip("checkov is not installed in .venv-checkov (`make checkov`)")
    done = subprocess.run([str(CHECKOV), "-f", str(path), "--framework", "cloudformation", "--skip-download",
                           "--output", "json", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BC_SKIP_MAPPING": "TRUE"})
    report = json.loads(done.stdout)
    return report[0] if isinstance(report, list) else report


def _failed(report: dict) -> list[str]:
    return [f"{c['check_id']} {c['resource']}: {c['check_name']}" for c in report["results"]["failed_checks"]]


def test_checkov_finds_nothing_in_the_template():
    report = _checkov(ROOT / "template.yaml")
    assert _failed(report) == []
    assert report["summary"]["passed"] > 0  # it did read the template


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_checkov_finds_nothing_after_the_sam_transform(tmp_path, profile):
    expanded = tmp_path / f"expanded-{profile}.json"
    expanded.write_text(json.dumps(tp.translate(tp.with_code(tp.load(), "code-bucket", "core.zip"),
                                                PROFILES[profile])))
    assert _failed(_checkov(expanded)) == []


def test_every_checkov_skip_gives_its_reason():
    skips = [(name, s) for name, resource in tp.load()["Resources"].items()
             for s in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])]
    assert skips, "template.yaml skips no check: then this test has nothing to hold"
    for name, entry in skips:
        assert set(entry) == {"id", "comment"} and len(entry["comment"].split()) >= 12, (name, entry)


def test_without_its_skips_the_template_fails_checkov(tmp_path):
    """The check can fail: the same template with its skips removed has findings."""
    bare = tp.load()
    for resource in bare["Resources"].values():
        resource.get("Metadata", {}).pop("checkov", None)
    scratch = tmp_path / "template-no-skips.json"
    scratch.write_text(json.dumps(bare))
    assert {"CKV_AWS_117", "CKV_AWS_26"} <= {line.split()[0] for line in _failed(_checkov(scratch))}
