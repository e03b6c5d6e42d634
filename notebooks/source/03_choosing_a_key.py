# %% [markdown]
# # 03 Choosing a key
#
# What should the idempotency key be made of?
#
# **After this chapter you can build an idempotency key that is the same for every copy of one order, and only for it.**
#
# Chapter 02 made the claim atomic: of two copies of an event, exactly one wins. But a claim is
# only as good as its key, and a key can be wrong in two ways. If a repeat of an event computes a
# new key, nobody holds that claim, and the repeat charges again. If two different orders compute
# the same key, the second finds the claim taken, and is never charged.
#
# What a key is made from, and how, is its **key recipe**. This chapter tries recipes on real
# uploads until one names each upload. Then it asks whether an upload is the right thing to name,
# or the order inside it.

# %% [markdown]
# ## Setup
#
# The key recipes from `idem`, the upload stories that test them, the order stories and the
# files of the last two sections, the check for your own recipe, and a fresh local world. Its bucket is versioned, as the
# bucket chapter 09 deploys is; a second world has a bucket without versioning.

# %%
from idem import views
from idem.core import keys
from idem.core.events import encode_key
from idem.core.handlers import keyed_events
from idem.lessons.scribes import key_stories, money, orders
from idem.lessons.scribes.recipe_check import check_recipe
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
views.show_json(world.event(order)["Records"][0]["s3"]["object"])

# %% [markdown]
# Four of its fields name the upload. The `key` is the object's name. The `eTag` is a hash of
# its bytes (more on it below). The `sequencer` and the `versionId` were met in chapter 01.
# Every copy of this event carries the same four, and a key recipe picks from them.

# %% [markdown]
# ## Two recipes that hold, three that do not
#
# `idem` writes every key as `<operation>#<recipe>#<sha256 of the recipe's text>`. Two recipes are
# sound. `version` takes the bucket, the name and the `versionId`. `content` takes the bucket, the
# name, the `eTag` and the `sequencer`.

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
# minute later. For a key, only one thing about a retry matters: it carries the same event.

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
# retries an event after an error or a timeout
# ([AWS: duplicate invocations](https://repost.aws/knowledge-center/lambda-function-duplicate-invocations)).
# So a key made from it holds against Lambda's own retries. But S3's second delivery is a new
# invocation, with a new request id, and a key made from it would charge that copy again. The
# request id names one invocation, not the upload.

# %% [markdown]
# ## The same bytes are not the same upload
#
# The `eTag` is a hash of the object's bytes. For a single-part upload, unencrypted or under S3's
# own keys, it is their MD5; under KMS or a customer's key it is not
# ([ETag](https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html)). Upload the same file
# twice, and the two uploads share one `eTag`. Each upload still gets its own `sequencer` and, in a
# versioned bucket, its own `versionId`:

# %%
again = world.upload("alice/order.csv", key_stories.ORDER)
views.rows_frame([{"upload": n, "eTag": o.etag, "sequencer": o.sequencer, "versionId": o.version_id}
                  for n, o in ((1, order), (2, again))])

# %%
story = key_stories.run_story("same bytes again", "etag_only")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# The second upload was never charged, and nothing failed. The claim did its job, on a key that
# named the bytes instead of the upload. Whether two uploads of the same bytes are two orders is a
# question of its own, answered at the end of this chapter.

# %% [markdown]
# ## Without versioning, every upload is version `null`
#
# Without versioning, an upload has no version of its own. AWS documents the event's `versionId`
# as the object's version in a versioned bucket, "otherwise null"
# ([event structure](https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html)).
# This workbook's world leaves the field out:

# %%
plain = unversioned.upload("alice/order.csv", key_stories.ORDER)
views.show_json(unversioned.event(plain)["Records"][0]["s3"]["object"])

# %% [markdown]
# The function reads a missing field, a JSON `null` and the text `"null"` alike, as no version:

# %%
views.show_source(keyed_events._version)

# %% [markdown]
# The `version` recipe then writes `null`, the same for every upload of the name:

# %%
print("version recipe's text:", keys.describe(plain, "version"))
story = key_stories.run_story("same bytes, versioning off", "version")
print(story.summary())
views.rows_frame(story.rows)

# %% [markdown]
# A real second upload is skipped as a repeat. The `content` recipe still tells the two uploads
# apart, by their sequencers. So the function in this workbook falls back to it when an upload
# has no `versionId`:

# %%
views.show_source(keys.recipe_for)

# %% [markdown]
# The story above turned that fallback off, to show the bare recipe fail. Through `content`, both
# uploads are charged:

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
# the name with `unquote_plus` before any recipe sees it. Here is what goes wrong with a key
# built from the raw field instead:

# %%
name = key_stories.encoded_name(world, "alice/my file.csv")
views.fields_frame(name)

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
# tell a repeat from a late upload, though. An older event may be a real upload that arrived late,
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

# %% tags=["nbval-ignore-output"]
views.story_explorer("same bytes again", "version")

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.story_explore("same bytes again", "version")

# %% [markdown]
# ## Try it
#
# Write a key recipe of your own for an upload, as your own handler would: with the standard
# library only, not `idem`'s helpers. It takes one record of the event as S3 sends it
# (`event["Records"][0]`, a dict), and the Lambda context. It returns the idempotency key itself:
# the string the ledger stores as its partition key.
#
# The check runs your recipe against seven pitfalls. Five are cases run above. Two are cases
# this chapter did not run. One: two uploads of the same bytes to a bucket without versioning,
# each record with `versionId` the text `"null"`, as AWS documents the field. The other: another
# name whose record carries the same `sequencer` (the aside above says why it may). Predict first:
# which of the recipes above would tell each pair apart?
#
# For each pitfall the check prints `pass`, or why the recipe fails. Decoding the name is not a
# pitfall: S3 writes each name one way only, so a key from the raw field is still one key per
# upload. Decode it anyway, so that the key names a real object. Change the recipe until every
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
# import hashlib
# from urllib.parse import unquote_plus
#
#
# def my_recipe(record, context):
#     s3 = record["s3"]
#     bucket, obj = s3["bucket"]["name"], s3["object"]
#     name = unquote_plus(obj["key"])  # the name as stored: S3 writes a space as +
#     version = obj.get("versionId")
#     if version and version != "null":  # a version of this upload's own
#         text = f"version\n{bucket}\n{name}\n{version}"
#     else:  # none, or "null": the bytes and the order S3 saw them in
#         text = f"content\n{bucket}\n{name}\n{obj['eTag']}\n{obj['sequencer']}"
#     return "charge#" + hashlib.sha256(text.encode()).hexdigest()
# ```
#
# A `versionId` names one upload only in a versioned bucket. The text `"null"` is the same for
# every upload of the name. A recipe that falls back to `content` only when the field is missing
# keys the second upload like the first, and never charges it. The `content` recipe (`eTag` and
# `sequencer`) tells the two apart, as it did for the missing field. Keep the bucket and the name
# in the text: a sequencer orders the events of one name only (the aside above), so nothing
# promises that two names' uploads get different ones, and the check tries two that share one. The
# hash makes even the longest name a key of 71 characters. The context goes unused: nothing about
# the attempt belongs in the key. `idem` does the same in `keys.recipe_for` and
# `keyed_events._version`, shown above.
# </details>

# %% [markdown]
# ## An upload is not an order
#
# Every recipe above names one upload. That is right only while every upload is a new order, and
# it is not. An uploader's PUT can time out after S3 stored the object. The AWS SDKs then send the
# request again ([retry behavior](https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html)).
# S3 stores a second version with the same bytes, and sends a second event. That is a
# **retried PUT**: one order, two uploads. Keyed by the upload, it is charged twice.

# %% [markdown]
# So the handler to copy, `keyed`, names the order instead. Its setting `ORDER_IDENTITY`, the
# **order identity**, says what one order is, in one of three ways:
#
# * `order-id`, the default. The uploaded file is JSON and names its order:
#   `{"order_id": "A-1001", "amount_cents": 1250, "currency": "usd"}`. The key is made from the
#   account and the order id. The account is the first folder of the object's name:
#   `alice/A-1001.json` is alice's. The function reads the file at its exact version before it
#   claims.
# * `object-name`. The object's name is the order, which holds only if no name is written twice.
#   S3's conditional writes give that. A PUT with the header **If-None-Match** `*` is refused with
#   412 Precondition Failed when the name exists
#   ([conditional writes](https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html)).
# * `upload`, the recipes above: one charge per upload. It is kept to show why it is wrong for
#   orders.
#
# The header alone is the uploader's promise. A bucket policy makes it the bucket's rule. It must
# be a `Deny`: an `Allow` on the condition adds nothing for an uploader whose own policy already
# allows `s3:PutObject`
# ([enforce conditional writes](https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html)):

# %%
views.show_json(orders.write_once_policy(world.bucket))

# %% [markdown]
# The Deny applies when both conditions hold: the request has no `If-None-Match` header, and it
# creates an object. The second condition spares the steps of a multipart upload that take no
# header. The upload's last step, `CompleteMultipartUpload`, must still carry it.
#
# Here are three things an uploader can do to one order. Each runs through the keyed handler on
# moto, under each order identity. Under `object-name` the uploader sends `If-None-Match: *`, as
# the policy makes it, and moto refuses a second write to the name as S3 does:

# %%
for title, story in orders.STORIES.items():
    print(f"{title:24} {story.note}")
views.rows_frame(orders.order_grid())

# %% [markdown]
# What to notice:
#
# * `upload` charges the retried PUT twice, and the corrected re-upload twice as well.
# * `order-id` charges each order once, and the new order A-1002 anew. It pays a GetObject each
#   time it handles an upload's event, retries included, to read the order file. The function's
#   execution role needs `s3:GetObjectVersion` on the bucket (`s3:GetObject` too, for a bucket
#   without versioning), and every uploader must write the order's id into the file.
# * `object-name` reads nothing. S3 refused the second PUT, so no second event came, and the
#   uploader learned it at once from the 412. A new order then needs a new name. The policy also
#   refuses every copy into the bucket, as AWS's page on enforcing it notes.
# * Neither `object-name` nor `upload` reads the file. They charge every upload the same price,
#   the setting `PRICE_PER_UPLOAD_CENTS` (500 cents here), and refuse to start without it.
#
# Without the bucket policy, `object-name` is weaker. A second write to the name meets the first
# order's key: it is never charged, but nobody is told either.

# %% [markdown]
# Under `order-id`, the corrected re-upload was not charged again: it carries the first order's
# key, and the claim holds. It was not simply skipped either. The order's record keeps the amount
# it charged, and this upload asks another. The handler cannot tell a correction from a mistake,
# so it fails, and the event lands in the failure queue for a person. That person refunds or
# charges the difference by hand. The last section shows more files refused this way.

# %% [markdown]
# ## A key that outlives Stripe's memory
#
# A key made from the order is the same for the order's whole life: a copy of its event, or the
# same file uploaded again weeks later, brings the same key. Stripe remembers a key for less. It
# may forget a key once the key is 24 hours old, and then the key charges anew
# ([idempotency](https://docs.stripe.com/idempotency)). So `keyed` counts the key's age from the
# order's first charge attempt, which its record keeps. From 23 hours on, before it charges, it
# searches Stripe for a charge made with the key. It charges only when the search finds none
# (chapter 06 shows the search).
#
# Here the handler charged order A-1001, but died on every try before it wrote the charge down.
# The same file is uploaded again 25 hours later, after Stripe forgot the key:

# %%
late = money.resent_later(25)
print(f"uploaded again {late.resent_after_h:g} h after the first attempt; "
      f"keys Stripe forgot: {late.keys_stripe_pruned}")
print(f"searched Stripe first: {late.searched_stripe}; new charge calls: {late.charge_calls}; "
      f"charges for the order at Stripe: {late.payment_intents}")

# %% [markdown]
# One charge at Stripe. The search found the first charge, and the handler recorded it instead of
# charging again.

# %% [markdown]
# ## Whose order, and who pays
#
# Under `order-id` the key holds the account, so alice's order 1001 and bob's order 1001 are two
# orders, with two keys. The account also decides who pays, and here the file has no say.
#
# The uploader writes the file, so the handler takes from it only what the uploader may decide:
# which order, its amount and currency, and which of the payer's saved payment methods to use.
# That line is the **trust boundary**. Who pays lies beyond it, and so do the limits on the amount:
# the uploader can write neither. Who pays comes from the **customer mapping**: one item per
# account in the ledger table, naming the
# account's Stripe customer (`cus_...`). A person writes it with the runbook command
# `idem customers link ACCOUNT cus_... --reason TEXT`, which also records who linked it and why.
# The function reads that item. In production its role is denied every write to it. The bucket,
# too, should let only your uploader's role write, each account under its own folder (chapter 12
# lists both).

# %% [markdown]
# The amount is bounded, and the file is strict. The bounds are the function's settings, which
# the uploader cannot change:
#
# * `amount_cents` is required, an integer, between `MIN_AMOUNT_CENTS` (default 50, Stripe's
#   smallest charge in US dollars,
#   [minimum amounts](https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts)) and
#   `MAX_AMOUNT_CENTS` (default 100000).
# * `currency` must be in the allow-list `CURRENCIES` (default `usd`).
# * A field the handler does not know is refused: `"amount": 129900` is not charged a default.
# * `customer` may be left out. If the file names one, it must be the account's linked customer.
# * `payment_method` may be left out: the customer's default is charged. If the file names one,
#   Stripe refuses a method attached to another customer
#   ([customer](https://docs.stripe.com/api/payment_intents/object)), and nothing is charged.
#
# An order that breaks a rule is **parked**: nothing is charged, the invocation fails, and the
# event reaches the failure queue with the reason. A metric counts it, and an alarm watches that
# metric. Here are six files, uploaded after alice and bob were linked (carol was not). The
# handler runs on moto and charges through Stripe's own SDK, aimed at a local Stripe that keeps
# Stripe's rules:

# %%
who = money.who_pays()
views.Whole(money.who_pays_rows(who))

# %%
with views.folded_output():
    print(money.reasons(who))

# %% [markdown]
# Two orders named 1001 are two charges, each to its own account's customer. Bob's file that
# names alice charged nobody. Each reason says what to do next.

# %% [markdown]
# ## Summary
#
# * An upload's key comes from its event: the decoded name with its `versionId`, or with its
#   `eTag` and `sequencer`. Never from the attempt or the bytes alone. Hash the recipe's text,
#   and start it with the operation's name.
# * Charge per order, not per upload: a retried PUT is a second upload of one order. Name the
#   order by its account and the id in its file (the default), or by a name written once
#   (`If-None-Match`, made the bucket's rule by a Deny in its policy). Once the key is 23 hours
#   old, search Stripe for its charge before charging: Stripe may forget a key after 24 hours.
# * Take from the file only what the uploader may decide: the order, its amount and currency,
#   within limits the function sets. Who pays comes from the customer mapping, written by
#   `idem customers link`.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [04 Claim first](04_claim_first_and_the_poison.ipynb): what a claim does when the
# work after it fails.
