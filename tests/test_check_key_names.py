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


def test_a_function_that_does_not_decode_the_key_breaks_with_its_own_finding():
    """Its clean run fails on 'order 1 ü.json' (NoSuchKey), and passes on 'order-1.json': the report is
    the plain-named check's, and it breaks with "the key is not URL-decoded", never "create the bucket"."""
    import jsonschema
    from pathlib import Path

    code, out, err = cli(target("undecoded_key"), "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 1 and report["exit_code"] == 1 and report["holds"] is False, err
    assert report["key_not_decoded"].startswith("the key is not URL-decoded: S3's event carries the object's key "
                                                "URL-encoded (https://docs.aws.amazon.com/AmazonS3/latest/userguide/"
                                                "notification-content-structure.html)")
    assert "NoSuchKey" in report["key_not_decoded"] and report["baseline"]["provider:charge"] == 1
    jsonschema.validate(report, json.loads((Path(__file__).parent.parent / "docs" / "check-report.schema.json").read_text()))


def test_plain_names_need_no_decoding_and_keep_s3s_longest_length():
    from urllib.parse import quote_plus

    from idem.explore import triggers
    from idem.explore.key_decoding import plain_names

    with plain_names():
        short, longest = triggers.object_name(7), triggers.object_name(7, longest=True)
        neighbour = triggers.object_name(7, triggers.SQS_BATCH[1])
    assert (short, neighbour) == ("check00007/order-1.json", "check00007/order-2.json")
    assert len(longest.encode()) == 1024 and quote_plus(longest, safe="/") == longest
    assert triggers.object_name(7) == "check00007/order 1 \u00fc.json"  # afterwards, as before
