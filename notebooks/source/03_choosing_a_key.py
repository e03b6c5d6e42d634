# %% [markdown]
# # 03 Choosing a key
#
# **After this chapter you can say what an idempotency key must be made of, and show five ways a
# key that looks reasonable charges twice or skips an upload that should have been charged.**
#
# Chapter 02 made the claim atomic. An atomic claim on the wrong key is still wrong: if a retry
# computes a new key, the claim lets it through; if two genuine uploads compute the same key, the
# claim turns the second one away. The key decides what counts as "the same piece of work", so it
# has to be built from the work (the upload), never from the attempt (the invocation).

# %% [markdown]
# ## Setup
#
# The key recipes, the event helpers, the upload stories, and two fresh local worlds: one with a
# versioned bucket (as `template.yaml` creates it) and one without versioning.

# %%
import json

from idem import views
from idem.core import keys
from idem.core.events import encode_key, newer_sequencer, read_event
from idem.local.world import LocalWorld
from idem.local import key_stories

world = LocalWorld()
unversioned = LocalWorld(versioned=False)
print(f"bucket {world.bucket} (versioned), bucket {unversioned.bucket} (not versioned), "
      f"clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## The recipes
#
# Every key in this workbook is `<operation>#<recipe>#<sha256 of the recipe's text>`. Two recipes
# are sound: the object key plus its `versionId`, or the object key plus its `eTag` and
# `sequencer`. Both use only fields that S3 puts in the event, so a retry or a second delivery of
# the same event computes the same key.

# %%
views.show_source(keys.by_version, keys.by_content_and_sequencer, keys.idempotency_key)

# %% [markdown]
# And three recipes that look plausible and are kept in `idem` to be shown failing:

# %%
views.show_source(keys.by_etag_only, keys.by_clock, keys.by_fresh_uuid)

# %% [markdown]
# ## Upload stories
#
# To test a recipe, this chapter runs *upload stories*: real uploads into a moto bucket, and
# their events delivered in a chosen order (with Lambda retries and S3 duplicates mixed in)
# through the function's real entry point, running `claim_first` with `KEY_RECIPE` set to the
# recipe. For each arrival it records the key the claim used (`k1`, `k2`, ... in order of first
# appearance) and whether it charged. An arrival *should* charge when it is the first arrival of
# its upload.

# %%
views.show_source(key_stories.run_story)

# %%
views.rows_frame([{"story": s.title, "uploads": len(s.uploads), "arrivals": len(s.deliveries),
                   "versioned bucket": s.versioned, "what happens": s.note}
                  for s in key_stories.STORIES.values()])

# %% [markdown]
# ## From the work, never from the attempt
#
# A retry carries the same event as the first attempt, and so does S3's second delivery. A key
# made from the event is the same each time. A key made from the clock, or from a fresh random id,
# is new each time, and a new key is a claim nobody holds:

# %%
story = key_stories.run_story("retry and duplicate", "clock")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# Three arrivals, three keys, three charges. The same story with the `version` recipe: one key,
# one charge, and the repeats stand down.

# %%
story = key_stories.run_story("retry and duplicate", "version")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# ## Identical content is not the same event
#
# The `eTag` is a digest of the object's bytes (for a single-part upload, their MD5). A customer
# who uploads the same file twice has placed two orders, and both uploads carry one `eTag`. Each
# upload gets its own `sequencer`, though, and in a versioned bucket its own `versionId`:

# %%
first = world.upload("alice/order.csv", key_stories.ORDER)
again = world.upload("alice/order.csv", key_stories.ORDER)
views.rows_frame([{"upload": n, "eTag": o.etag, "sequencer": o.sequencer, "versionId": o.version_id,
                   "etag_only text": keys.describe(o, "etag_only")[-32:]}
                  for n, o in ((1, first), (2, again))])

# %%
print("etag_only keys equal:", keys.idempotency_key(first, "etag_only") == keys.idempotency_key(again, "etag_only"))
print("content keys equal:  ", keys.idempotency_key(first, "content") == keys.idempotency_key(again, "content"))
story = key_stories.run_story("same bytes again", "etag_only")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# The second order was never charged, and nothing failed: the claim did its job on a key that
# named the bytes instead of the upload.

# %% [markdown]
# ## Versioning off: every upload of a name is version `null`
#
# Without versioning, S3 gives an upload no `versionId` and the event carries none. The `version`
# recipe then writes `null`, the same for every upload of that name. Here is the object part of
# the event from the unversioned bucket, straight from `put_object` on moto:

# %%
plain = unversioned.upload("alice/order.csv", key_stories.ORDER)
views.show_text(json.dumps(unversioned.event(plain)["Records"][0]["s3"]["object"], indent=2), "json")

# %%
print("version recipe text:", keys.describe(plain, "version"))
story = key_stories.run_story("same bytes, versioning off", "version")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# A perfectly legitimate second upload is skipped as a duplicate. If you cannot turn versioning
# on, use the `content` recipe: the sequencer still tells the two uploads apart. The function in
# this workbook does that for you: with no `versionId`, it keys the upload by content and
# sequencer (`keys.recipe_for`). The story above turned that off to show the bare recipe fail.

# %%
print(key_stories.run_story("same bytes, versioning off", "content").summary())

# %% [markdown]
# ## S3 sends the key URL-encoded
#
# In the event, the object key is URL-encoded: a space arrives as `+`. `read_event` decodes it
# with `unquote_plus` before any recipe sees it. Build a key from the raw field instead, and it
# names an object that does not exist, and disagrees with a key built anywhere the real name is
# used (a replay tool listing the bucket, an EventBridge event, which is not encoded, or an
# auditor):

# %%
views.show_source(encode_key)

# %%
name = key_stories.encoded_name(world, "alice/my file.csv")
views.rows_frame([{"": field, "value": value} for field, value in vars(name).items()])

# %% [markdown]
# ## Keys stay small
#
# An S3 object key can be 1,024 bytes of UTF-8; a DynamoDB partition key at most 2,048. A key that
# carried the raw event field could blow through that limit (a multi-byte character becomes six
# bytes of `%XX` escapes). Hashing keeps every key the same size, whatever the name:

# %%
long_name = world.upload("alice/" + "é" * 509, key_stories.ORDER)
views.rows_frame([{"what": what, "bytes": size} for what, size in key_stories.key_sizes(long_name).items()])

# %%
print("raw event field as pk:", key_stories.store_pk(world, encode_key(long_name.key)))
print("idempotency key as pk:", key_stories.store_pk(world, keys.idempotency_key(long_name)))

# %% [markdown]
# ## One key per operation
#
# One upload may trigger two side effects: the charge and, say, a receipt email. Give both the
# same key and whichever runs second finds the key claimed and concludes it already ran. Here both
# operations claim through the ledger, first sharing the charge's key, then each with its own
# operation prefix:

# %%
views.show_source(key_stories.charge_and_receipt)

# %%
views.rows_frame(key_stories.charge_and_receipt(world, world.upload("bob/order.csv"), scoped=False))

# %%
views.rows_frame(key_stories.charge_and_receipt(world, world.upload("carol/order.csv"), scoped=True))

# %% [markdown]
# Shared, the receipt was skipped without an error; scoped, both ran. `idempotency_key` takes the
# operation as an argument for this reason, and refuses an empty one.

# %% [markdown]
# ## The sequencer orders; it does not deduplicate
#
# Within one object key, a later event has a larger `sequencer`, so a consumer that keeps only the
# latest version can spot an event that arrives late. Here two versions of one name are uploaded,
# and their events arrive newest first, followed by a second delivery of the older one:

# %%
v1 = world.upload("dave/order.csv", key_stories.ORDER)
v2 = world.upload("dave/order.csv", key_stories.OTHER_ORDER)
views.rows_frame(key_stories.sequencer_order([v2, v1, v1]))

# %% [markdown]
# The late `v1` is *older*, not a duplicate: it is a real upload that must still be billed, so
# "skip anything older than the newest" would lose it. And the ordering check gives the repeat of
# `v1` the very same answer as `v1` itself. Telling a repeat from a late upload means remembering
# every event you have processed, which is what a ledger of keys is for. The same story through
# the `content` recipe charges both uploads once each:

# %%
story = key_stories.run_story("out of order", "content")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# One more detail: sequencers are hexadecimal strings of varying length. S3's rule is to pad the
# shorter one with zeros on the right, then compare. Comparing them as numbers without padding
# gets it backwards when the later one happens to be shorter:

# %%
views.show_source(newer_sequencer, key_stories.naive_newer)

# %%
pairs = [("0055AED6DCD9028200", "0055AED6DCD90281E5"),  # same length: both rules agree
         ("0055AED6DCD90282", "0055AED6DCD90281E5"),  # the later one is shorter
         ("0055AED6DCD90281E5", "0055AED6DCD90282")]
views.rows_frame([{"a": a, "b": b, "a newer (padded)": newer_sequencer(a, b),
                   "a newer (unpadded numbers)": key_stories.naive_newer(a, b)} for a, b in pairs])

# %% [markdown]
# ## Every recipe, every story
#
# The whole grid, each cell a fresh bucket and a run through the entry point:

# %%
grid = key_stories.run_grid()
fig = views.story_grid(grid)

# %% [markdown]
# Keys made from the attempt (`clock`, `uuid`) overcharge in every story. `etag_only` misses
# every re-upload of the same bytes. `version` is right as long as the bucket is versioned, and
# `content` is right everywhere.

# %% [markdown]
# ## Explore
#
# Pick an upload story and a recipe, and see which arrivals are charged.

# %%
# NBVAL_IGNORE_OUTPUT
views.story_explorer("same bytes again", "version")

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.story_explore("same bytes again", "version")

# %% [markdown]
# ## What the table holds afterwards
#
# The ledger of the last story run (`out of order` through `content`): the account's entry, and
# one claim per upload. The `source` column is the text each key was hashed from, kept beside the
# record so a human can tell which upload it was; the sequencer is what keeps the two apart.

# %%
views.items_frame(story.items, width=64)

# %% [markdown]
# And this chapter's own world: the claims of the charge-and-receipt demo (the stores of the long
# key were deleted again). No Lambda ran here, so its failure queue is empty.

# %%
views.items_frame(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# Write your own recipe: a function from the decoded `S3Object` (fields `bucket`, `key`, `etag`,
# `sequencer`, `version_id`, `size`) to the text a key is hashed from. It must charge every story
# right, including the one in an unversioned bucket. The check runs every story through it.

# %%
def my_recipe(obj):  # your answer here
    return f"{obj.bucket}/{obj.key}#{obj.version_id}"


# %%
HINTS = {
    "extra": "a repeat of one event got a new key: use only fields that are the same on every "
             "delivery of an event (no clock, no random ids, no event time).",
    "missed": "two different uploads got the same key: add a field that differs between uploads "
              "of the same name even without versioning.",
}
try:
    runs = key_stories.run_grid([my_recipe])
except Exception as broken:
    print(f"The recipe raised {type(broken).__name__}: {broken}")
else:
    wrong = [r for r in runs if r.extra or r.missed]
    for run in wrong:
        print(f"{run.story.title}: {run.summary()}; {HINTS['extra' if run.extra else 'missed']}")
    if not wrong:
        print(f"Right: every one of the {len(runs)} stories charged each upload exactly once.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_recipe(obj):
#     return f"{obj.bucket}/{obj.key}#{obj.etag}#{obj.sequencer}"
# ```
#
# The `versionId` is `None` in a bucket without versioning, so the starting recipe gives both
# uploads of `alice/order.csv` the same text. The sequencer is in every `ObjectCreated` event and
# differs per upload, and repeats of one event carry the same one. (`keys.by_content_and_sequencer`
# is this recipe.)
# </details>
#
# ## Summary
#
# * Build the key from the event's facts about the upload (object key with `versionId`, or with
#   `eTag` and `sequencer`), never from the clock or a random id; decode the object key first.
# * Identical bytes are not the same upload, and without versioning every `versionId` is `null`:
#   both silently skip real orders.
# * Give each side effect its own key prefix, keep keys hashed and small, and use the sequencer to
#   order events for one object, not to deduplicate them.
#
# **Next:** [04 Claim-first and the poison](04_claim_first_and_the_poison.ipynb)
