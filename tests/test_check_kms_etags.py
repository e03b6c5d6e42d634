"""An object's eTag under SSE-KMS is no MD5 of its bytes (docs/one_charge_per_order.md): "Objects created by
the PUT Object, POST Object, or Copy operation ... and are encrypted by SSE-C or SSE-KMS, have ETags that are not
an MD5 digest of their object data" (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html). With
--template, a trigger's bucket that encrypts with a KMS key gives each of the check's uploads an eTag of its
own, so the uploader's retried PUT of the same order comes with another one."""
from __future__ import annotations

import hashlib
from pathlib import Path

from check_cli import cli

TEMPLATE = str(Path(__file__).parent / "templates" / "sse_kms.yaml")


def check(monkeypatch, function: str) -> tuple[int, str, str]:
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "overwrite")
    return cli("--template", TEMPLATE, "--function", function, "--retries", "0", "--workers", "1")


def test_a_key_from_the_name_and_etag_breaks_where_the_bucket_encrypts_with_kms(monkeypatch):
    code, out, err = check(monkeypatch, "NameEtagKms")
    assert code == 1 and "double_charge" in out, (out + err)[-3000:]
    assert "the bucket encrypts with a KMS key, so each upload's eTag is its own" in out, out[:3000]
    assert "the uploader's retried PUT (same bytes)" in out.split("the smallest:")[1][:400], out[-3000:]


def test_the_same_key_holds_where_the_bucket_encrypts_with_s3s_own_keys(monkeypatch):
    # under SSE-S3 a PutObject's eTag is the bytes' MD5: the retried PUT of the same bytes has the same one
    code, out, err = check(monkeypatch, "NameEtagSseS3")
    assert code == 0 and "KMS" not in out, (out + err)[-3000:]


def test_a_key_from_the_order_holds_where_the_bucket_encrypts_with_kms(monkeypatch):
    # keyed_books reads the upload by IfMatch on the event's eTag: the event and the stored object agree
    code, out, err = check(monkeypatch, "KeyedBooksKms")
    assert code == 0, (out + err)[-3000:]


def test_an_upload_under_kms_has_an_etag_of_its_own_that_the_object_and_its_event_share():
    from idem.sim.world import LocalWorld

    with LocalWorld(prefix="kms-etags", provider_in_memory=True) as world:
        plain = world.upload("acct/a.json", b'{"order_id": "1"}')
        world.etags_not_md5 = True
        world.seed_ids(7)
        first = world.upload("acct/b.json", b'{"order_id": "1"}')
        again = world.upload("acct/b.json", b'{"order_id": "1"}')
        world.seed_ids(7)
        replayed = world.upload("acct/c.json", b'{"order_id": "1"}')
        stored = world.s3.head_object(Bucket=world.bucket, Key="acct/b.json")["ETag"].strip('"')
    md5 = hashlib.md5(b'{"order_id": "1"}').hexdigest()
    assert plain.etag == md5  # a PutObject under SSE-S3: the bytes' MD5
    assert md5 not in (first.etag, again.etag) and first.etag != again.etag  # under KMS: each put its own
    assert stored == again.etag  # what the event says is what S3 keeps (an IfMatch read finds it)
    assert replayed.etag == first.etag  # drawn from moto's seeded ids: the same in every run
