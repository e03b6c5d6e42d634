# %% [markdown]
# # 03 Choosing a key
#
# What should the idempotency key be made of?
#
# **After this chapter you can build an idempotency key that is the same for every copy of one upload's event, and only for it.**
#
# Chapter 02 made the claim atomic: of two copies of an event, exactly one wins. But a claim is
# only as good as its key, and a key can be wrong in two ways. If a repeat of an event computes a
# new key, nobody holds that claim, and the repeat charges again. If two real uploads compute the
# same key, the second finds the claim taken, and its order is never charged.
#
# What a key is made from, and how, is its **key recipe**. This chapter tries recipes on real
# uploads until one is right every time.

# %% [markdown]
# ## Setup
#
# The key recipes from `idem`, the upload stories that test them, the check for your own recipe,
# and a fresh local world. Its bucket is versioned, as `template.yaml` creates it; a second world
# has a bucket without versioning.

# %%
import json

from idem import views
from idem.core import keys
from idem.core.events import encode_key
from idem.lessons import key_stories
from idem.lessons.recipe_check import check_recipe
from idem.sim.world import LocalWorld

world = LocalWorld()
unversioned = LocalWorld(versioned=False)
print(f"bucket {world.bucket} (versioned), bucket {unversioned.bucket} (not versioned), "
      f"clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## What the event says about an upload
#
# S3 tells the function about an upload with an event. Here is the part of it about the object,
# for one upload to the versioned bucket:

# %%
order = world.upload("alice/order.csv", key_stories.ORDER)
views.show_text(json.dumps(world.event(order)["Records"][0]["s3"]["object"], indent=2), "json")

# %% [markdown]
# Four of its fields name the upload. The `key` is the object's name. The `eTag` is a hash of
# its bytes (more on it below). The `sequencer` and the `versionId` were met in chapter 01. Every copy of this event
# carries the same four, and a key recipe picks from them.

# %% [markdown]
# ## Two recipes that hold, three that do not
#
# `idem` writes every key as `<operation>#<recipe>#<sha256 of the recipe's text>`. Two recipes are
# sound. One takes the bucket, the name and the `versionId`. The other takes the bucket, the name,
# the `eTag` and the `sequencer`.

# %%
views.show_source(keys.by_version, keys.by_content_and_sequencer, keys.idempotency_key)

# %% [markdown]
# And three that look plausible, kept in `idem` to be shown failing:

# %%
views.show_source(keys.by_etag_only, keys.by_clock, keys.by_fresh_uuid)

# %% [markdown]
# ## Upload stories
#
# To try a recipe, this chapter runs *upload stories*. Each one uploads real objects into a moto
# bucket. Then it delivers their events in a chosen order, repeats included, through the
# function's entry point. The handler is `claim_first`, which claims the key and then charges. An
# event should charge when it is the first to arrive for its upload.

# %%
views.stories_frame()

# %% [markdown]
# A story fails nothing: every event runs to the end, and it arrives ten seconds after the one
# before. A `Lambda retry` row stands for the retry after a failed attempt, which on AWS comes a
# minute later. For a key, only one thing about it matters: it carries the same event.

# %% [markdown]
# ## From the work, never from the attempt
#
# A Lambda retry carries the same event as the first attempt. So does S3's second delivery. A key
# made from the event is the same each time. A key made from the clock is new each time, and a new
# key is a claim nobody holds:

# %%
story = key_stories.run_story("retry and duplicate", "clock")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# Three events, three keys (`k1` to `k3`), three charges. The same story with the `version`
# recipe gives one key and one charge. Both repeats stand down:

# %%
story = key_stories.run_story("retry and duplicate", "version")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# What about the invocation's request id, `context.aws_request_id`? Lambda keeps it when it
# retries an event ([AWS: duplicate invocations](https://repost.aws/knowledge-center/lambda-function-duplicate-invocations)).
# But S3's second delivery is a new invocation, with a new request id. A key made from it would
# charge that copy again. The request id names the attempt, not the upload.

# %% [markdown]
# ## The same bytes are not the same upload
#
# The `eTag` is a hash of the object's bytes. For a single-part upload, unencrypted or under S3's
# own keys, it is their MD5; under KMS or a customer's key it is not
# ([ETag](https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html)). In this bucket, a
# customer who uploads the same file twice has placed two orders, with one `eTag`. Each upload still gets
# its own `sequencer` and, in a versioned bucket, its own `versionId`:

# %%
again = world.upload("alice/order.csv", key_stories.ORDER)
views.rows_frame([{"upload": n, "eTag": o.etag, "sequencer": o.sequencer, "versionId": o.version_id}
                  for n, o in ((1, order), (2, again))])

# %%
story = key_stories.run_story("same bytes again", "etag_only")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# The second order was never charged, and nothing failed. The claim did its job, on a key that
# named the bytes instead of the upload.

# %% [markdown]
# ## Without versioning, every upload is version `null`
#
# Without versioning, S3 gives an upload no `versionId`, and its event carries none:

# %%
plain = unversioned.upload("alice/order.csv", key_stories.ORDER)
views.show_text(json.dumps(unversioned.event(plain)["Records"][0]["s3"]["object"], indent=2), "json")

# %% [markdown]
# The `version` recipe then writes `null`, the same for every upload of the name:

# %%
print("version recipe's text:", keys.describe(plain, "version"))
story = key_stories.run_story("same bytes, versioning off", "version")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# A real second order is skipped as a repeat. The `content` recipe still tells the two uploads
# apart, by their sequencers. So the function in this workbook falls back to it when an upload
# has no `versionId`:

# %%
views.show_source(keys.recipe_for)

# %% [markdown]
# The story above turned that fallback off, to show the bare recipe fail. Through `content`, both
# orders are charged:

# %%
print(key_stories.run_story("same bytes, versioning off", "content").summary())

# %% [markdown]
# ## Decode the name first
#
# In the event, the object's name is URL-encoded. S3 writes a space as `+`, and a real `+` as
# `%2B`:

# %%
views.show_source(encode_key)

# %% [markdown]
# Decoding needs `unquote_plus`, which reads `+` as a space. Plain `unquote` leaves the `+` in
# place ([S3 event structure](https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html):
# the object key is URL-encoded):

# %%
views.decoding_frame([encode_key("alice/my file.csv"), encode_key("alice/a+b.csv")])

# %% [markdown]
# Only the last column names the objects as the bucket does. The function's `read_event` decodes
# the name with `unquote_plus` before any recipe sees it. Here is what goes wrong with a key built from the raw
# field instead:

# %%
name = key_stories.encoded_name(world, "alice/my file.csv")
views.rows_frame([{"": field, "value": value} for field, value in vars(name).items()])

# %% [markdown]
# The raw field names an object that is not in the bucket. Its key also differs from the key
# made from the real name, as an auditor listing the bucket would make it.

# %% [markdown]
# ## Hash the recipe's text
#
# The key has a second reader besides DynamoDB. Chapter 06 passes it to the payment provider as
# its own idempotency key. Stripe's keys are at most 255 characters
# ([idempotency](https://docs.stripe.com/idempotency)). An S3 object's name alone can be 1,024
# bytes of UTF-8 ([object keys](https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html)),
# so a recipe's text can be far longer than that. Hashing it with SHA-256 gives every key one short
# size, whatever the name. Here is the longest name S3 allows, 509 two-byte characters after
# `alice/`:

# %%
long_name = world.upload("alice/" + "é" * 509, key_stories.ORDER)
views.rows_frame(key_stories.key_sizes(long_name))

# %% [markdown]
# The ledger keeps the readable text beside the hashed key (as `source`), so a person can still
# tell which upload a record is for.

# %% [markdown]
# ## Aside: one key per operation
#
# One upload may cause two effects: the charge and, say, a receipt email. If both claim one key,
# the second finds it taken and never runs. So `idempotency_key` starts each key with the
# operation's name, and refuses an empty one:

# %%
for operation in ("charge", "receipt"):
    print(f"{operation:8} {keys.idempotency_key(order, operation=operation)[:48]}...")

# %% [markdown]
# ## Aside: the sequencer orders, it does not deduplicate
#
# For one object's name, a later event has a larger `sequencer`. So it can tell which of two
# versions is newer (`newer_sequencer` in `idem.core.events` compares them as S3 says). It cannot
# tell a repeat from a late upload, though. An older event may be a real order that arrived late,
# and it must still be charged. The story `out of order` below is one.

# %% [markdown]
# ## Every recipe, every story
#
# The whole grid, each square a fresh bucket and a run through the entry point:

# %%
grid = key_stories.run_grid()
fig = views.recipe_grid(grid)

# %% [markdown]
# Keys made from the attempt (`clock`, `uuid`) charge too often in every story. The `etag_only`
# recipe misses every second upload of the same bytes. The `version` recipe is right while the
# bucket is versioned, and `content` is right everywhere.

# %% [markdown]
# ## Explore
#
# Pick an upload story and a recipe, and see which events are charged.

# %%
# NBVAL_IGNORE_OUTPUT
views.story_explorer("same bytes again", "version")

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.story_explore("same bytes again", "version")

# %% [markdown]
# ## Try it
#
# Write a key recipe of your own, as a handler would. It takes one record of the event as S3
# sends it (`event["Records"][0]`, a dict), and the Lambda context. It returns the idempotency
# key itself: the string the ledger stores as its partition key.
#
# The check runs your recipe against five pitfalls. For each one it prints `pass`, or why the
# recipe fails. Decoding the name is not one of them: S3 writes each name one way only, so a key
# from the raw field is still one key per upload. Decode it anyway, so that the key names a real
# object. Write the recipe, run the check, read why it fails, and change the recipe until every
# pitfall passes.

# %%
def my_recipe(record, context):
    """One S3 event record (a dict) -> the idempotency key (a string)."""
    return None  # your answer here


# %%
print(check_recipe(my_recipe))

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# from idem.core import keys
# from idem.core.events import read_event
#
# def my_recipe(record, context):
#     obj = read_event({"Records": [record]}).objects[0]  # the name decoded with unquote_plus
#     return keys.idempotency_key(obj, keys.recipe_for(obj, "version"))
# ```
#
# This is the key the function in this workbook uses. Its first line decodes the name and reads
# the `versionId` (`None` when there is none). Then `recipe_for` picks `version` when there is a
# `versionId`, and `content` (`eTag` and `sequencer`) when there is not. Last, `idempotency_key`
# hashes the recipe's text, so even the longest name gives a key under 100 bytes. The context goes
# unused: nothing about the attempt belongs in the key.
# </details>
#
# ## Summary
#
# * Make the key from the upload, as its event describes it: the decoded name with its
#   `versionId`, or with its `eTag` and `sequencer` when there is none.
# * Never make it from the attempt (the clock, a random id, the request id) or from the bytes
#   alone: a repeat would charge again, or a second order never.
# * Hash the recipe's text, so every key is small, and start it with the operation's name.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [04 Claim first](04_claim_first_and_the_poison.ipynb): what a claim does when the
# work after it fails.
