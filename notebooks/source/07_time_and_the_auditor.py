# %% [markdown]
# # 07 Time and the auditor
#
# **After this chapter you can say how long an idempotency record must live and why its expiry is
# checked in code, run a reconciliation job that finds what slipped through, read the footprints a
# duplicate leaves, and pick the pattern a handler needs.**
#
# The keyed scribe of chapter 06 closes every window the matrix tests. Two questions are left.
# A record that remembers forever fills the table forever, so it must expire: when? And no pattern
# is better than the code and configuration around it, so something has to check, after the fact,
# that every upload was charged once: how?

# %% [markdown]
# ## Setup

# %%
import pandas as pd

from idem import views
from idem.core import reconcile
from idem.core.errors import ConfigError
from idem.core.settings import Settings
from idem.core.handlers.keyed import KeyedLedger, Record
from idem.local import redrive
from idem.local.runtime import DEFAULT_MAX_EVENT_AGE, RETRY_DELAYS
from idem.local.world import LocalWorld
from idem.local import batches, expiry

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, provider {world.provider_table}, "
      f"failure queue {world.queue_name}, clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## How long a copy can still arrive
#
# A record must outlive the last copy of its event. After a function error, Lambda's retries come
# quickly. After a throttle or a system error, though, Lambda keeps the event in its async queue
# and tries again for as long as the function's `MaximumEventAgeInSeconds` allows, six hours by
# default, and S3 may deliver a copy of its own on top. The local runtime uses the same numbers:

# %%
print(f"retries after a function error: +{RETRY_DELAYS[0]:.0f} s, then +{RETRY_DELAYS[1]:.0f} s "
      f"(the last one {sum(RETRY_DELAYS):.0f} s after the first attempt)")
print(f"MaximumEventAgeInSeconds by default: {DEFAULT_MAX_EVENT_AGE} s = "
      f"{DEFAULT_MAX_EVENT_AGE / 3600:.0f} hours")

# %% [markdown]
# So a record that lives ten minutes covers the retries after an error, and not much else. The
# function reads its record lifetime from `RECORD_TTL_SECONDS` (a day by default). Here one upload
# is delivered, and the same event again two hours later, to functions whose records live ten
# minutes or a day:

# %%
late = [expiry.late_duplicate("robust", ttl_seconds=600, delay=7200),
        expiry.late_duplicate("robust", ttl_seconds=600, delay=7200, swept=True),
        expiry.late_duplicate("keyed", ttl_seconds=600, delay=7200),
        expiry.late_duplicate("keyed", ttl_seconds=86_400, delay=7200)]
views.late_frame(late)

# %%
fig = views.record_life_chart(late)

# %% [markdown]
# Start with the last row: with a record that lives a day, the late copy finds `done` and stands
# down. With ten minutes, the record was long expired when the copy came, and what happened
# next depends on the handler, and on something stranger:
#
# * **keyed** checks expiry in its claim, so an expired record counts as no record: the copy ran
#   the work again. Two things held the line. The provider still remembered the key and replayed
#   the charge, so money moved once; and the commit books each charge id only once, so the ledger
#   still agrees. But the money was saved by the provider's memory, not yours (Stripe keeps keys
#   for at least 24 hours; yours may not): a provider that had forgotten would have charged again.
# * **robust** never looks at `expires_at`. Whether it charged again depended only on whether
#   DynamoDB had deleted the item yet (`TTL sweep ran`): the same code, the same settings, one charge
#   or two, decided by a background process.

# %% [markdown]
# ## TTL deletes late, so expiry is checked in code
#
# DynamoDB's TTL feature deletes an item some time after its TTL attribute passes, usually within
# a few days, not at the second. Until then the item is still returned by every read. The ledger
# table has TTL switched on for `expires_at`; moto stores that setting and, unlike AWS, never
# deletes anything. (That is why `expiry.late_duplicate` offers `swept=True`: it deletes the
# expired items itself, standing in for the AWS background process.) Read back from the table:

# %%
world.dynamodb.describe_time_to_live(TableName=world.ledger_table)["TimeToLiveDescription"]

# %% [markdown]
# So the record's expiry has to be a rule the code applies, the same on every read, whatever the
# sweeper has done. In `idem` it is `Record.expired`, and the claim's condition repeats it inside
# DynamoDB (`expires_at <= :now`), so the check and the write are one atomic step:

# %%
views.show_source(Record.expired, KeyedLedger.claim)

# %% [markdown]
# Try other lifetimes and delays. The copy stands down whenever the record's bar still covers its
# arrival; the yellow band is how long a copy can keep coming.

# %%
# NBVAL_IGNORE_OUTPUT
views.late_duplicate_explorer()

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore_late_duplicate("keyed", 600, 7200, False)

# %% [markdown]
# ## The auditor
#
# Idempotency prevents mistakes; it cannot prove there were none. For that, a small scheduled job
# compares what arrived with what was recorded and what the provider did. `idem.core.reconcile` lists
# every object version in the bucket, scans the ledger table and the provider's charges, and
# reports four kinds of trouble: work that is missing (an object with no `done` record and no
# charge), records stuck `in_progress` past their lease, double charges for one object, and
# accounts whose ledger and provider totals differ. It only reads.

# %%
views.show_source(reconcile.reconcile)

# %% [markdown]
# A staged day of uploads. Each one meets the handler and the fault that leave one kind of trouble
# behind, so that one report can show every kind; in a real system they would come from one
# handler, spread over months.

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
# * bob's upload was **charged twice**, and his account shows it: refund one charge.
# * carol's upload and erin's are **missing**: carol's record says `claimed` (chapter 04's silent
#   loss) and erin's event never arrived at all. Redeliver both.
# * dave's record is **stuck** `in_progress` long after its lease, and his account has a charge the
#   ledger never recorded: the money moved, the books did not. His event is in the failure queue.
#   A redrive within a day finishes it with the provider's replay (chapter 06); a later one meets a
#   pruned key, which the next section takes on.
#
# None of these raised an alarm when it happened, apart from dave's failure-queue message. The
# report is the alarm.

# %% [markdown]
# ## Time beyond a day
#
# Four lifetimes decide what a late copy of an event meets. Lambda retries and re-delivers an
# event until its maximum event age. Your record turns copies away until its TTL. The provider
# replays a key until it prunes it: Stripe may prune a key once it is 24 hours old, and then the
# same key is a new request that charges again. And the failure queue keeps a message until its
# retention ends, so a person can redrive it for that long. Here they are as `template.yaml` sets them:

# %%
pd.DataFrame(redrive.lifetimes())

# %% [markdown]
# The first three obey one rule: as long as Lambda can still deliver a copy, the record must turn
# it away and the provider must still know its key. The function checks that rule at cold start
# (`MAX_EVENT_AGE_SECONDS` tells it the event age) and refuses to start when a setting breaks it:

# %%
try:
    Settings.from_env({"LEDGER_TABLE": "ledger", "PROVIDER_TABLE": "provider",
                       "RECORD_TTL_SECONDS": "3600", "MAX_EVENT_AGE_SECONDS": "21600"})
except ConfigError as refused:
    print(f"ConfigError: {refused}")

# %% [markdown]
# The queue's fourteen days break no rule, but a redrive can come long after the key is gone.
# Here an upload is charged, then fails before its commit on every attempt, so its event lands in
# the failure queue. Twenty-five hours later, with the fault fixed, `python -m idem redrive` sends
# it back. Naive redrive code builds a fresh event; the real one keeps the event as it was:

# %%
for fresh in (True, False):
    story = redrive.story(25 * 3600, fresh=fresh)
    print(f"{'a fresh event' if fresh else 'the event as it was'}: {story['charges']} charge(s) at the "
          f"provider, {story['ledger']} in the ledger, record {story['record']}")

# %% [markdown]
# The fresh event looks new, so keyed charged it with its key, and the provider had pruned that
# key an hour before: two charges. The event as it was still carries its `eventTime`. Keyed saw it
# was older than the provider's key window, looked the charge up by the upload first (real
# providers offer that lookup by metadata), found it and booked it: one charge. A provider with no
# lookup would leave the event to a person, with that reason, rather than charge blindly.

# %% [markdown]
# ## The footprints of a duplicate
#
# Even without the job, a duplicate leaves traces in numbers you already have. Count what came in,
# what the function did and what each side wrote down:

# %%
views.footprints_frame(batches.footprints(world, attempts))

# %% [markdown]
# In a healthy system the first line, the records marked `done`, the provider's charges and the
# ledger's entries are all the same number, and the failure queue is empty. Here they all differ,
# and each difference is a footprint: more charges than uploads is a double charge; more charges
# than ledger entries is money the books do not know about; fewer `done` records than uploads is
# unfinished or lost work; retries mean failures happened (Lambda's `Errors` metric), and a non-empty
# failure queue means some of them were never resolved. An alarm on the queue's depth and a daily
# count comparison are cheap; the double charge in a customer's bank statement is not.

# %% [markdown]
# ## What the table and the queue hold afterwards
#
# The ledger table after the day: one record per upload that reached the function (erin's has
# none), in every state the chapter talked about, the account entries, and the fault counters.

# %%
views.items_frame(world.ledger().items())

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
# Choose `my_ttl_seconds`, the keyed function's `RECORD_TTL_SECONDS`, so that a copy arriving as
# late as Lambda allows by default (six hours after the event) still finds its record and stands
# down.

# %%
my_ttl_seconds = 600  # your answer here

# %%
trial = expiry.late_duplicate("keyed", ttl_seconds=my_ttl_seconds, delay=DEFAULT_MAX_EVENT_AGE)
if trial.expired:
    print(f"Too short: the record expired at t={trial.expires_at:.0f} s and the copy came at "
          f"t={trial.delay:.0f} s, so the copy ran the work again ({trial.late_status}). Only the "
          "provider's memory of the key kept the customer from paying twice.")
else:
    print(f"Right: the record lives until t={trial.expires_at:.0f} s and the copy at "
          f"t={trial.delay:.0f} s found it ({trial.late_status}). Leave room on top: S3's own "
          "copies and redrives from the failure queue can come later still.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# Anything above 21,600 s works for this copy; 86,400 (a day) is the sensible start, because a
# record costs little to keep and a redrive from the failure queue can happen long after the
# event. Tune it from there, never below the maximum event age.
# </details>

# %% [markdown]
# ## The road map: which scribe do you need?
#
# Not every handler needs the whole ceremony. Start on the left and stop at the first answer
# that fits:
#
# ```mermaid
# flowchart LR
#     A{"naturally<br/>idempotent?"} -- yes --> N["do that:<br/>no record"]
#     A -- no --> B{"losing the work<br/>acceptable?"}
#     B -- "yes, and watched" --> C["claim-first"]
#     B -- no --> D["claim, work,<br/>commit"]
#     D --> E{"effect in someone<br/>else's system?"}
#     E -- yes --> F["and send them<br/>the key: keyed"]
#     E -- no --> G["effect and record<br/>in one transaction"]
# ```
#
# * **Naturally idempotent** first: if the side effect can be an overwrite, or an upsert by a stable
#   id, repeating it is harmless and no record is needed.
# * **Claim-first** (chapters 02-04) is enough when losing the work on a failure is acceptable and
#   something watches for it: its failures are silent by construction.
# * **Claim, work, commit** (chapters 05-06) the moment a lost piece of work costs something:
#   `in_progress` -> `done`, a lease to the deadline, failures to the queue.
# * If the effect lives **in someone else's system**, send them the same key (the keyed scribe); if
#   it lives in your own table, write the effect and the `done` record in one transaction.
# * Whatever you chose: reconcile on a schedule.
#
# ## The checklist
#
# * **The key comes from the work**, never the attempt: bucket, decoded key and `versionId` (or
#   eTag plus sequencer), scoped to the operation. Turn bucket versioning on.
# * **Claim with one conditional write**, never a read followed by a write; let the failed write
#   return the record (`ReturnValuesOnConditionCheckFailure`), so a duplicate costs one call.
# * **Let the record say how far the work got** (`in_progress`, `done`), who holds it and until
#   when, and commit only as its owner.
# * **Send the same key to whatever moves the money**, with the same parameters on every attempt.
# * **Fail loudly**: raise, so Lambda retries; configure an on-failure destination and alarm on its
#   depth.
# * **Keep the function timeout close to the work**: it is the lease.
# * **Let records outlive every copy**: longer than the maximum event age (a day is a good start),
#   with expiry checked in code, not left to TTL; check the lifetimes at cold start.
# * **Redrive the event as it was**, and look up what the provider charged before charging an
#   event older than its key window.
# * **Remember nothing in the container**: anything that must survive an invocation goes in the table.
# * **Reconcile**: count what arrived, what was recorded and what the provider did, on a schedule.
#
# ## Summary
#
# * A record must outlive the last copy of its event: minutes cover the retries, but copies can come
#   for six hours, so start at a day, and check expiry in code because TTL deletes late.
# * Past a day the provider may forget the key: a redrive keeps the event's age, and keyed looks the
#   charge up first instead of charging twice.
# * The reconciliation job compares the bucket, the ledger and the provider, and turns silent
#   trouble (missing work, stuck records, double charges, mismatched books) into a report.
# * Most handlers need less than the full ceremony; the road map says which, and the checklist
#   says what the full one contains.
#
# **Next:** [08 Powertools side by side](08_powertools_side_by_side.ipynb)
