"""Names as S3 has them: a function that stores the key as S3's event carries it (URL-encoded) is
compared under that name at every length (idem.explore.state.Names); a key over S3's 1,024 bytes is
refused as S3 refuses it, which moto does not (idem.explore.s3_limits)."""
from __future__ import annotations

import json

from check_cli import cli, target


def test_a_key_stored_as_s3_sends_it_is_compared_under_that_name_at_s3s_longest_name():
    code, out, err = cli(target("stores_key_as_sent"), "--effect", "dynamodb:PutItem", "--retries", "0",
                         "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 0, err  # was silent_mismatch on the 1,024-byte schedules: the encoded long name
    long = [r for r in report["results"] if "1,024 bytes" in r["schedule"]]
    assert long and all(r["verdict"] == "exactly_once" for r in long)


def test_a_write_past_s3s_key_limit_is_refused_as_s3_refuses_it():
    code, out, err = cli(target("archives_under_prefix"), "--effect", "s3:CopyObject", "--retries", "0",
                         "--workers", "1", "--json")
    report = json.loads(out)
    long = [r for r in report["results"] if "1,024 bytes" in r["schedule"]]
    assert long and all(r["verdict"] == "failed_visibly" for r in long)  # moto alone: exactly_once
    assert code == 0, err


def test_the_limit_counts_bytes_of_utf8():
    from idem.explore.s3_limits import too_long

    assert not too_long("PutObject", {"Key": "a" * 1024})
    assert too_long("PutObject", {"Key": "\u00e9" * 513})  # 1,026 bytes in 513 characters
    assert not too_long("GetObject", {"Key": "a" * 2000})  # a read of a name S3 never stored: its own answer
