# %% [markdown]
# # 07 Time and the auditor
#
# How long must a handler remember an event, and how do you find the duplicates that got past it?
#
# **After this chapter you can size a record's lifetime and write the reconciliation query that finds
# what slipped through.**
#
# The keyed handler of chapter 06 closes every hole the matrix tests. Two questions are left.
#
# * How long must a record last? Keyed's `done` line is the ledger itself and stays for good.
#   Every other record (a claim whose work never finished, another pattern's record) is only a
#   memory of an event. It must last as long as a copy of that event can arrive, and may go
#   after. This chapter finds when.
# * How do you know it worked? No pattern is better than the code and settings around it.
#   Something has to check, after the fact, that every order was charged once. This chapter
#   writes that check.

# %% [markdown]
# ## Setup

# %%
from idem import views
from idem.core.reconcile import audit as reconcile
from idem.core.errors import ConfigError
from idem.core.handlers.keyed import KeyedLedger
from idem.core.settings import Settings
from idem.lessons.auditing import auditor, batches, expiry
from idem.explore import redrive
from idem.sim.runtime import DEFAULT_MAX_EVENT_AGE, RETRY_DELAYS
from idem.sim.world import LocalWorld

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, provider {world.provider_table}")
print(f"failure queue {world.queue_name}, clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## How long a copy can still arrive
#
# A record must outlive the last copy of its event. After a function error, Lambda's retries come
# quickly. After a throttle or a system error, Lambda keeps the event in its queue and tries again
# for longer. The limit is the function's **maximum event age** (`MaximumEventAgeInSeconds`): how
# long Lambda keeps an event before it gives up. It is six hours by default. S3 may deliver a copy
# of its own on top. The local runtime uses the same numbers:

# %%
print(f"retries after a function error: +{RETRY_DELAYS[0]:.0f} s, then +{RETRY_DELAYS[1]:.0f} s "
      f"(the last one {sum(RETRY_DELAYS):.0f} s after the first attempt)")
print(f"MaximumEventAgeInSeconds by default: {DEFAULT_MAX_EVENT_AGE} s = "
      f"{DEFAULT_MAX_EVENT_AGE / 3600:.0f} hours")

# %% [markdown]
# ## Records that expire
#
# DynamoDB's **TTL** (time to live) deletes an item once a time stored in the item has passed. The
# ledger table names `expires_at` as that attribute. The deletion is free, and it comes late: AWS
# says it typically deletes an expired item within two days of its expiry, not at the second
# ([UpdateTimeToLive](https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html)).
# Until then, the expired item still shows up in reads.
#
# The function reads its record lifetime from `RECORD_TTL_SECONDS` (a day by default). What a
# handler does with it differs:
#
# * Keyed writes no `expires_at` at all. A claim may stand for money that moved (chapter 06), so
#   it is never deleted on its own. Its commit turns it into the ledger line, which never expires
#   either.
# * Robust writes `expires_at` on every record, its `done` record too, so TTL clears finished work.
#
# Here one upload is delivered, and the same event again two hours later. Both functions are set
# to `RECORD_TTL_SECONDS=600`, ten minutes; only robust writes it into its records:

# %%
late = [expiry.late_duplicate("robust", ttl_seconds=600, delay=7200),
        expiry.late_duplicate("robust", ttl_seconds=600, delay=7200, swept=True),
        expiry.late_duplicate("keyed", ttl_seconds=600, delay=7200)]
views.late_frame(late)

# %%
fig = views.record_life_chart(late)

# %% [markdown]
# Read the table and the chart by handler:
#
# * *keyed*: the late copy found `done` and stood down. Its records carry no expiry, so the ten
#   minutes never applied to them. The ledger line does not expire.
# * *robust* never looks at `expires_at`. Whether it charged again depended only on whether
#   DynamoDB had deleted the item yet (`TTL sweep ran`). Unswept, the record expired at ten minutes
#   and was still in the table at two hours (the faded bar), so the copy found it. The same code
#   and the same settings gave one charge or two, decided by a background process.
#
# Moto stores the TTL setting and never deletes anything. So `swept=True` deletes the expired
# items itself, in place of AWS's background process; [the appendix](13_appendix_the_local_aws.ipynb#deploy-gaps)
# lists the other gaps. Read back from the table:

# %%
world.dynamodb.describe_time_to_live(TableName=world.ledger_table)["TimeToLiveDescription"]

# %% [markdown]
# ## TTL deletes late, so expiry is checked in code
#
# An expired item is still returned by every read until TTL deletes it. So a handler whose records
# expire must apply expiry as a rule of its own, the same on every read: compare `expires_at`
# with the clock. Robust does not, and the story above shows the cost. Keyed sidesteps the
# question, since none of its records expire. Its claim takes a record over only when the lease
# is over, never because TTL may or may not have deleted it yet:

# %%
views.show_source(KeyedLedger.claim)

# %% [markdown]
# Try other lifetimes, delays and handlers. A robust copy stands down whenever its record is still
# in the table when it arrives. The yellow band is how long a copy can keep coming.

# %% tags=["nbval-ignore-output"]
views.late_duplicate_explorer(handler="robust", swept=True)

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore_late_duplicate("robust", 600, 7200, True)

# %% [markdown]
# ## Time beyond a day
#
# Four **lifetimes** decide what a late copy of an event meets:
#
# * Lambda retries and delivers an event again until its maximum event age.
# * Your record turns copies away until its TTL, where the record has one.
# * The provider replays a key until it prunes it. How long it remembers a key is its key window
#   (chapter 06). Stripe may prune a key once it is 24 hours old
#   ([idempotent requests](https://docs.stripe.com/api/idempotent_requests)). After that, the
#   same key is a new request, and it charges again.
# * The failure queue keeps a message until its retention ends, so a person can redrive it for that
#   long.
#
# Here they are as `template.yaml` sets them. The provider's key window is not yours to set: the
# stand-in states it, as Stripe does. The last rule, "look up first", is the redrive story below:
# a redrive that may come after the key window asks the provider before it charges.

# %%
views.rows_frame(redrive.lifetimes())

# %% [markdown]
# The first three obey one rule. As long as Lambda can still deliver a copy, the record must turn it
# away and the provider must still know its key. The function checks that rule at cold start, with
# `MAX_EVENT_AGE_SECONDS` to tell it the event age. It refuses to start when a setting breaks it:

# %%
try:
    Settings.from_env({"LEDGER_TABLE": "ledger", "PROVIDER_TABLE": "provider",
                       "RECORD_TTL_SECONDS": "3600", "MAX_EVENT_AGE_SECONDS": "21600"})
except ConfigError as refused:
    print(views.fold(f"ConfigError: {refused}"))

# %% [markdown]
# The queue's fourteen days keep every rule, but a redrive can come long after the key is gone. Here
# an upload is charged, then fails before its commit on every attempt, so its event lands in the
# failure queue. Twenty-five hours later, with the fault fixed, `python -m idem redrive` sends it
# back. Naive redrive code builds a fresh event; the real one keeps the event as it was:

# %%
for fresh in (True, False):
    story = redrive.story(25 * 3600, fresh=fresh)
    sent = "a fresh event" if fresh else "the event as it was"
    print(f"{sent}: {story['charges']} charge(s) at the provider, {story['ledger']} in the ledger, "
          f"record {story['record']}")

# %% [markdown]
# Both lines say one charge, each for its own reason. The event as it was still carries its
# `eventTime`, 25 hours old: older than the key window. The fresh event looks new, but the order's record
# still holds `first_attempt_at`, 25 hours back, so its key is old too (chapter 06). Either age
# makes keyed look the charge up first. It searched by the key it had written into the charge's
# metadata, found the charge and booked it. The provider had pruned the key an hour before: a
# charge with it would have charged again.
#
# Stripe offers that look-up: its search finds payments by metadata
# ([search](https://docs.stripe.com/api/payment_intents/search)), usually within a minute of the
# charge. A provider with no look-up would leave the event to a person, with that reason, rather
# than charge blindly.

# %% [markdown]
# ## The auditor
#
# Idempotency prevents mistakes; it cannot prove there were none. For that, a small scheduled job
# compares what arrived, what was recorded and what the provider did. `idem.core.reconcile` reads
# the bucket's object versions, the ledger table and the provider's charges. It only reads, and it
# reports five kinds of trouble:
#
# * missing work: an object with no `done` record and no charge;
# * stuck records: `in_progress` long after their lease ended;
# * double charges: more than one charge for one upload;
# * records that need a person, with the reason the handler stored;
# * account mismatches: the ledger and the provider disagree about an account.
#
# Its scope is everything, on every run: every version in the bucket, a `Scan` of the whole
# ledger, and all of the provider's charges. A `Scan` bills for every item it reads, whatever a
# filter drops ([Scan](https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Scan.html)).
# So a daily run costs more each day: after a year it reads a year of lines. A production job
# reads one window of days instead, and only the provider's charges that this handler made.

# %%
views.show_source(reconcile.reconcile)

# %% [markdown]
# Here is a staged day of uploads. Each meets the handler and the fault that leave one kind of
# trouble behind, so that one report can show every kind. In a real system they would come from one
# handler, over months.

# %%
for upload in batches.MESSY_BATCH:
    print(f"{upload.key:22} {upload.handler or '-':12} {upload.story}")

# %% [markdown]
# First the morning: the ordinary upload alone. A clean batch gets a clean report.

# %%
attempts = batches.run_batch(world, batches.MESSY_BATCH[:1])
morning = reconcile.reconcile(world.s3, world.dynamodb, world.bucket, world.ledger_table,
                              world.provider_table, now=world.clock.now())
print(morning.render())

# %% [markdown]
# Then the rest of the day, and the job running an hour later:

# %%
attempts += batches.run_batch(world, batches.MESSY_BATCH[1:])
world.clock.advance(3600)
report = reconcile.reconcile(world.s3, world.dynamodb, world.bucket, world.ledger_table,
                             world.provider_table, now=world.clock.now())
print(f"clean: {report.clean}; {report.objects} objects, {report.records} records, "
      f"{report.charges} charges, at t={world.clock.t:.0f} s")
views.report_frame(report)

# %% [markdown]
# Every staged incident is on the list, and each finding points at something to do:
#
# * Bob's upload was *charged twice*, and his account shows it: refund one charge.
# * Carol's upload and Erin's are *missing*. Carol's record says `claimed`: chapter 04's silent
#   loss. Erin's event never arrived at all. Deliver both again.
# * Dave's record is *stuck* `in_progress`, and his account has a charge the ledger never
#   recorded. The money moved; the books did not. His event is in the failure queue. A redrive
#   within 23 hours of the first attempt finishes it with the provider's replay. A later one finds
#   the key old, and keyed looks the charge up first (chapter 06).
#
# Only Dave's failure-queue message raised an alarm when it happened. For the rest, the report is
# the alarm.

# %% [markdown]
# ## The footprints of a duplicate
#
# Even without the job, a duplicate leaves traces in numbers you already have. Count what came in,
# what the function did, and what each side wrote down:

# %%
views.footprints_frame(batches.footprints(world, attempts))

# %% [markdown]
# In a healthy system, these counts agree: uploads, `done` records, the provider's charges and the
# ledger's entries are one number, and the failure queue is empty. Here they differ, and each
# difference is a footprint:
#
# * more charges than uploads: a double charge;
# * more charges than ledger entries: money the books do not know about;
# * fewer `done` records than uploads: unfinished or lost work;
# * retries: each follows a failed attempt. An event's last failure has none after it, so failures
#   can outnumber retries. Lambda's `Errors` metric counts every failed attempt, each
#   retry included, so it is not a count of failed events
#   ([metrics](https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html));
# * a failure queue that is not empty: some failures were never resolved.
#
# An alarm on the queue's depth and a daily count are cheap. A double charge on a customer's bank
# statement is not.

# %% [markdown]
# ## What the table and the queue hold afterwards
#
# The ledger table after the day. Each upload that reached the function has a record, in every
# state the chapter talked about; Erin's has none. Bob's account entry is robust's counter. Alice's
# ledger line is her `done` record itself, with her account and the charge, and no `expires_at`.

# %%
views.compact_items(world.ledger().items())

# %%
for message in world.failure_queue():
    obj = message["requestPayload"]["Records"][0]["s3"]["object"]
    print(f"{message['requestContext']['condition']} after "
          f"{message['requestContext']['approximateInvokeCount']} invocations: {obj['key']} "
          f"({message['responsePayload']['errorType']})")
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# Write the heart of the reconciliation job yourself: the query that compares the two sets of
# books. It gets what the ledger holds, one row per account, and what the provider charged, one row
# per charge. Here is this chapter's day, read the way your function will get it:

# %%
booked, charged = auditor.booked(world), auditor.charged(world)
views.booked_frame(booked)

# %%
views.charged_frame(charged)

# %% [markdown]
# Each row is a dict: `booked` rows have `account`, `charges` and `cents`; `charged` rows have
# `charge_id`, `account`, `cents`, `upload` and `key`. The tables show `upload` by its object key;
# your function gets the whole `s3://` reference. Return the differences as a set of pairs:
#
# * `("no ledger line", account)`: the provider charged the account more than the ledger holds;
# * `("no charge", account)`: the ledger holds more for the account than the provider charged;
# * `("double charge", upload)`: the provider charged one upload more than once.
#
# The check runs your function on three staged days and compares it with `reconcile`. The days are
# a clean day, this chapter's day, and a day with a line booked by hand for an order that was never
# charged.

# %%
def differences(booked, charged):
    """What differs between the ledger (booked) and the provider (charged)."""
    return None  # your answer here: a set of (kind, account or upload) pairs


# %%
print(auditor.check_query(differences).explain())

# %% [markdown]
# <details><summary>Solution</summary>
#
# Total both sides per account, over the accounts of both sides; then count charges per upload.
#
# ```python
# from collections import Counter
#
#
# def differences(booked, charged):
#     ours = {b["account"]: (b["charges"], b["cents"]) for b in booked}
#     theirs = {}
#     for c in charged:
#         n, cents = theirs.get(c["account"], (0, 0))
#         theirs[c["account"]] = (n + 1, cents + c["cents"])
#     found = set()
#     for account in set(ours) | set(theirs):
#         t, o = theirs.get(account, (0, 0)), ours.get(account, (0, 0))
#         if t > o:
#             found.add(("no ledger line", account))
#         elif o > t:
#             found.add(("no charge", account))
#     per_upload = Counter(c["upload"] for c in charged)
#     found |= {("double charge", u) for u, n in per_upload.items() if n > 1}
#     return found
# ```
#
# Three misses are common:
#
# * Looping over the ledger's accounts only. Dave has a charge and no ledger line at all, so his
#   account is on the provider's side only.
# * Looping over the provider's accounts only. A line booked by hand has no charge behind it.
# * Counting double charges per account. Two uploads by one customer may be two orders; one
#   upload charged twice is always a double charge.
# </details>
#
# ## What to ship
#
# The checklist of everything chapters 02 to 07 taught, and a diagram for picking a pattern, are
# in [12 What to ship](12_what_to_ship.ipynb).
#
# ## Summary
#
# * Long enough for every copy: Lambda can deliver one for six hours by default, so start at a day.
#   Keyed's records never expire; a handler whose records do must check expiry in code, as TTL is
#   late.
# * Past the provider's key window, keyed looks the charge up before it charges again. It knows by
#   the event's age, which a redrive keeps, or by the key's (`first_attempt_at`).
# * The reconciliation job finds what got past: it compares the bucket, the ledger and the provider,
#   and turns silent trouble into a report.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [08 Powertools side by side](08_powertools_side_by_side.ipynb)
