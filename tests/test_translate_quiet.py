"""The SAM transform, expanded in-process, writes nothing to a chapter's output: without a
feature-toggle config, aws-sam-translator logs a warning for each feature it asks about
("Feature '...' not available in Feature Toggle Config."), which chapters 09 and 10 printed."""
from __future__ import annotations

import logging

from idem.deploy import template as tp


def test_translating_the_template_logs_no_feature_toggle_warning(caplog):
    with caplog.at_level(logging.WARNING):
        expanded = tp.translate(tp.with_code(tp.load(), "bucket", "code.zip"), {"Profile": "prod"})
    assert "AWS::Lambda::Function" in {r["Type"] for r in expanded["Resources"].values()}
    assert not [r.getMessage() for r in caplog.records if "Feature Toggle" in r.getMessage()]
    level = logging.getLogger("samtranslator.feature_toggle.feature_toggle").level
    assert level == logging.NOTSET  # the logger is quieted only while translating
