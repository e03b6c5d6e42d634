"""Key recipes: derived from the work, scoped per operation, short enough for DynamoDB."""
from __future__ import annotations

import pytest

from idem.core.events import S3Object
from idem.core.keys import MAX_PARTITION_KEY_BYTES, RECIPES, idempotency_key

OBJ = S3Object(bucket="b", key="alice/a.csv", size=1, etag="e1", sequencer="01", version_id="v1")


@pytest.mark.parametrize("recipe", ["version", "content", "etag_only"])
def test_good_and_content_recipes_are_stable_across_attempts(recipe):
    assert idempotency_key(OBJ, recipe) == idempotency_key(OBJ, recipe)


@pytest.mark.parametrize("recipe", ["clock", "uuid"])
def test_attempt_derived_recipes_never_repeat_on_purpose(recipe):
    # The anti-patterns: a retry of the same event gets a new key, so nothing is deduplicated.
    assert idempotency_key(OBJ, recipe) != idempotency_key(OBJ, recipe)


def test_keys_are_scoped_per_operation():
    charge, receipt = idempotency_key(OBJ, operation="charge"), idempotency_key(OBJ, operation="receipt")
    assert charge != receipt
    assert charge.startswith("charge#version#") and receipt.startswith("receipt#version#")


def test_version_recipe_collides_without_versioning_on_purpose():
    first = S3Object("b", "a.csv", 1, "e1", "01", version_id=None)
    reupload = S3Object("b", "a.csv", 1, "e2", "02", version_id=None)
    assert idempotency_key(first, "version") == idempotency_key(reupload, "version")
    assert idempotency_key(first, "content") != idempotency_key(reupload, "content")


def test_etag_only_collides_on_a_reupload_of_the_same_bytes_on_purpose():
    first = S3Object("b", "a.csv", 1, "same", "01", version_id="v1")
    again = S3Object("b", "a.csv", 1, "same", "02", version_id="v2")
    assert idempotency_key(first, "etag_only") == idempotency_key(again, "etag_only")
    assert idempotency_key(first, "content") != idempotency_key(again, "content")


def test_keys_fit_a_partition_key_whatever_the_object_key():
    huge = S3Object("b", "é" * 512, 1, "e", "01", "v")  # 1,024 bytes of UTF-8
    for recipe in RECIPES:
        assert len(idempotency_key(huge, recipe).encode()) <= 100 < MAX_PARTITION_KEY_BYTES


@pytest.mark.parametrize("recipe, operation", [("nope", "charge"), ("version", ""), ("version", "a#b")])
def test_bad_recipe_or_operation_is_refused(recipe, operation):
    with pytest.raises(ValueError):
        idempotency_key(OBJ, recipe, operation)
