"""Names as S3 has them: a function that stores the key as S3's event carries it (URL-encoded) is
compared under that name at every length (idem.explore.judge.state.Names); names that need
URL-decoding are their own family (idem.explore.families.key_decoding, docs/check_from_a_template.md); a key over S3's 1,024 bytes is
refused as S3 refuses it, which moto does not (idem.explore.sandbox.s3_limits)."""
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
    from idem.explore.sandbox.s3_limits import too_long

    assert not too_long("PutObject", {"Key": "a" * 1024})
    assert too_long("PutObject", {"Key": "\u00e9" * 513})  # 1,026 bytes in 513 characters
    assert not too_long("GetObject", {"Key": "a" * 2000})  # a read of a name S3 never stored: its own answer


def _names(report):
    """The results of the family names, by the file name each uploaded."""
    from idem.explore.families.key_decoding import NAMES

    found = {name: r for r in report["results"] for name in NAMES if f"the upload named {name!r}" in r["schedule"]}
    assert len(found) == len(NAMES) and report["dimensions"]["names"] == len(NAMES)
    return found


def test_a_function_that_does_not_decode_the_key_breaks_with_its_own_finding_naming_the_schedule():
    """docs/check_from_a_template.md P3. Its clean run passes (a plain name), every name of the
    family names fails (NoSuchKey), and the report breaks with "the key is not URL-decoded", naming
    the first such schedule: never a failed clean run, never "create the bucket"."""
    import jsonschema
    from pathlib import Path

    code, out, err = cli(target("undecoded_key"), "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 1 and report["exit_code"] == 1 and report["holds"] is False, err
    assert report["baseline"]["provider:charge"] == 1  # the clean run charged: a plain name
    plain = next(r for r in report["results"] if r["schedule"] == "no fault; single; 0 retries")
    assert plain["verdict"] == "exactly_once"
    assert {r["verdict"] for r in _names(report).values()} == {"failed_visibly"}
    finding = report["key_not_decoded"]
    assert finding.startswith("the key is not URL-decoded: S3's event carries the object's key URL-encoded "
                              "(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html)")
    assert ("in the schedule (no fault; single, the upload named 'order 1.json' (S3's event: 'order+1.json'); "
            "0 retries) the function failed (NoSuchKey") in finding and "unquote_plus" in finding
    assert "bucket" not in finding.split("NoSuchKey", 1)[1]
    jsonschema.validate(report, json.loads((Path(__file__).parent.parent / "docs" / "check-report.schema.json").read_text()))


def test_a_function_that_decodes_with_unquote_plus_has_no_finding():
    """P4: decoded_key is undecoded_key with unquote_plus: every name of the family, once."""
    code, out, err = cli(target("decoded_key"), "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert "key_not_decoded" not in report, err
    assert {r["verdict"] for r in _names(report).values()} == {"exactly_once"}


def test_unquote_without_plus_fails_only_at_the_name_with_a_space():
    """P4: urllib.parse.unquote leaves '+' (S3's space) as it is: only 'order 1.json' fails."""
    code, out, err = cli(target("unquote_not_plus"), "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    names = _names(report)
    assert {name: r["verdict"] for name, r in names.items()} == {
        "order 1.json": "failed_visibly", "order+1.json": "exactly_once", "order-1-\u00fc.json": "exactly_once"}, err
    assert code == 1 and "the upload named 'order 1.json'" in report["key_not_decoded"]


def test_the_check_s_own_names_need_no_decoding():
    """P1 and P2: plain names for the clean run and every family but names; S3's longest name is
    1,024 bytes of the same letters; each of the family's names reads otherwise once encoded."""
    from urllib.parse import quote_plus

    from idem.explore.run import triggers
    from idem.explore.families.key_decoding import NAMES

    short, longest = triggers.object_name(7), triggers.object_name(7, longest=True)
    neighbour = triggers.object_name(7, triggers.SQS_BATCH[1])
    assert (short, neighbour) == ("check00007/order-1.json", "check00007/order-2.json")
    assert len(longest.encode()) == 1024 and quote_plus(longest, safe="/") == longest
    assert all(quote_plus(name) != name for name in NAMES)
    assert [quote_plus(name) for name in NAMES] == ["order+1.json", "order%2B1.json", "order-1-%C3%BC.json"]


def test_the_names_family_keeps_an_objects_folder_and_extension():
    """P5: an --object without KEY keeps its folders and extension in the family names."""
    from idem.explore.families.key_decoding import renamed

    assert renamed("incoming/check00001/photo.jpeg", "order 1.json") == "incoming/check00001/order 1.jpeg"
    assert renamed("photo", "order+1.json") == "order+1"
    assert renamed("a/b/report.csv", "order-1-\u00fc.json") == "a/b/order-1-\u00fc.csv"
