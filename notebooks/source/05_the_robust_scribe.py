# %% [markdown]
# # 05 The robust scribe
#
# **After this chapter you can draw the `in_progress` -> `done` record as a state machine, say
# where it ends up after each kind of failure, pick the exhausted event out of the failure queue
# and finish its work, and show the delivery it cannot handle: a copy running at the same time.**
#
# Chapter 04 ended with claim-first's weakness: its record says only "seen", so a retry cannot
# tell finished work from abandoned work, and stands down either way. The robust scribe writes
# down how far the work got instead. It writes the record as `in_progress` before the charge,
# and marks it `done` only after the charge and the ledger entry have landed. A retry that finds
# `in_progress` knows the work did not finish, and tries again.

# %% [markdown]
# ## Setup

# %%
import json

from idem import views
from idem.local.boundary import FaultPlan
from idem.core.handlers import robust
from idem.core.ledger import Ledger
from idem.local import scenarios as sc
from idem.local.runtime import LocalLambda
from idem.local.world import LocalWorld
from idem.local import leases, redrive

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, failure queue {world.queue_name}, "
      f"clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## The handler
#
# The whole pattern is four moves: read the record; if there is none, put `in_progress` with a
# conditional write; charge and write the ledger entry; mark the record `done`. The charge step is
# the same one every handler shares (chapter 01).

# %%
views.show_source(robust.handle)

# %% [markdown]
# And the ledger calls it makes. `put_in_progress` is the same conditional put claim-first uses
# (write only if the key has no record), with another status; `mark_done` is not conditional at
# all: it writes `done` over whatever is there.

# %%
views.show_source(Ledger.get_record, Ledger.put_in_progress, Ledger.put_if_absent, Ledger.mark_done)

# %% [markdown]
# ## A record that only moves forward
#
# Drawn as a state machine, the record has two states and a way out. Every arrow is one DynamoDB
# write or one decision made on a read:
#
# ```mermaid
# stateDiagram-v2
#     [*] --> in_progress: put wins
#     [*] --> stood_down: put loses
#     in_progress --> in_progress: work failed, retry
#     in_progress --> done: mark_done
#     done --> done: copy stands down
#     in_progress --> failure_queue: retries exhausted
#     failure_queue --> in_progress: redrive
# ```
#
# * **put wins / put loses**: no record was found, and the conditional put of `in_progress`
#   succeeded, or failed because a copy got there first (that copy stands down).
# * **work failed, retry**: the charge or the ledger entry failed; Lambda retries, the retry reads
#   `in_progress` and does the work again.
# * **mark_done**: the charge and the ledger entry landed, and the record is inked.
# * **copy stands down**: any later retry or copy reads `done` and returns.
# * **retries exhausted / redrive**: Lambda gives up and the event goes to the failure queue, with
#   the record still `in_progress`, until an operator sends it back.
#
# The states that can stay put forever are the interesting ones. `done` is the happy ending.
# `in_progress` with the event in the failure queue is the other one, and it is loud on purpose:
# something is unfinished, and both the record and the queue say which upload it was.
#
# Here is where each row of the matrix leaves the record, computed now, next to claim-first for
# comparison (the `record` column is the record's status at the end):

# %%
rows = [sc.run(s) for s in sc.headline_scenarios(["claim_first", "robust"])]
views.matrix_table(rows)

# %%
views.outcome_frame([r for r in rows if r.scenario.handler == "robust"])[
    ["fault", "times", "delivery", "charges", "ledger", "attempts", "dlq", "record", "verdict"]]

# %% [markdown]
# Three things to notice. Under a charge that fails every time (`at_charge, always`), robust
# charges nobody and the event reaches the failure queue with the record still `in_progress`:
# `failed_visibly`, where claim-first lost the work silently. Under a failure after the commit, the
# retry finds `done` and stands down. And two rows are red: a failure between the charge and
# `done` (the retry finds `in_progress` and charges again; that is chapter 06), and the
# concurrent copy, which is the rest of this chapter.

# %% [markdown]
# ## The poison, step by step
#
# Run the poison case in this chapter's world so its table and queue can be read back: the payment
# provider is down, so every attempt fails at the charge.

# %%
poisoned = LocalLambda(world, world.env("robust"), fault=FaultPlan.at_point("at_charge", "always"))
order = world.upload("alice/order-0001.csv", b"sku,qty\nledger,1\n")
poisoned.send(world.event(order))
views.attempts_frame(poisoned.run())

# %% [markdown]
# Three attempts, at t = 0, 60 and 180 s. The first read the record, found none and wrote it as
# `in_progress` (two record calls); each retry read `in_progress` (one call), skipped the put and
# tried the charge again.
# No money moved. After the third failure Lambda gave up and sent its **invocation record** to the
# on-failure destination, an SQS queue. This is the message, read back from the queue:

# %%
message = world.failure_queue()[0]
views.show_text(json.dumps(message, indent=2), "json")

# %% [markdown]
# What an operator needs is all there: `condition: RetriesExhausted` and
# `approximateInvokeCount: 3` (why it stopped), `responsePayload` (the last error), and
# `requestPayload`, the original S3 event, with the object's key and `versionId`. A dead-letter
# queue would hold only the bare event, with the request id, error code and error message as
# message attributes; the destination wraps it with the story. A function with neither discards
# the event after its retries. (AWS documents both in the Lambda guide, on retaining records of
# asynchronous invocations: docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html.)

# %%
payload = message["requestPayload"]["Records"][0]["s3"]["object"]
print(f"stuck upload: {payload['key']} (version {payload['versionId']}), "
      f"after {message['requestContext']['approximateInvokeCount']} invocations, "
      f"last error {message['responsePayload']['errorType']}")
views.items_frame(world.ledger().items())

# %% [markdown]
# The ledger table agrees: one record, `in_progress`, whose `source` names the same object and
# version. No account entry, because no charge landed.
#
# An hour later the provider is back. The operator **redrives** the queue: each message's
# `requestPayload` goes back to the function, and the message is deleted. The function finds
# `in_progress`, does the work, and marks the record `done`.

# %%
views.show_source(redrive.redrive)

# %%
world.clock.advance(3600)
fixed = LocalLambda(world, world.env("robust"))
print("redriven:", redrive.redrive_local(fixed))
print("charges at the provider:", len(world.provider().charges()),
      "| ledger entry for alice (charges, cents):", world.ledger().entry("alice"),
      "| record:", world.ledger().records()[0].status)

# %% [markdown]
# One charge, one ledger entry, record `done`, an hour late and with nothing lost. That is what
# the `in_progress` state buys: unfinished work stays findable until someone finishes it.

# %% [markdown]
# The provider being down is the kind failure: nothing happened, so a retry is safe. A provider
# can also fail *after* it started: it moves the money, then answers 500. Robust sends no key, so
# its retry is a new request:

# %%
half = sc.run(sc.Scenario("robust", "provider_500", "once"))
views.outcome_frame([half])[["handler", "fault", "charges", "ledger", "attempts", "record", "verdict"]]

# %% [markdown]
# Two charges, one ledger entry: the record said `in_progress`, which robust reads as "try again".
# Chapter 06 hands the provider a key, and shows what a saved 500 means then.

# %% [markdown]
# ## The hole: a copy running at the same time
#
# S3 delivers events at least once, and so does Lambda's own event queue: AWS's guide to
# asynchronous invocation warns that a function may receive the same event twice even when
# nothing failed (docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
# And the copies do not queue politely behind each other. Here
# the second copy starts while the first invocation sits between writing `in_progress` and calling
# the provider (the runtime's `during("before_charge", ...)` hook starts it at that moment):

# %%
concurrent = sc.run(sc.Scenario("robust", delivery="concurrent"))
views.attempts_frame(concurrent)[["t (s)", "delivery", "attempt", "container", "steps", "outcome",
                                  "result"]]

# %%
fig = views.timeline(concurrent)

# %% [markdown]
# Two deliveries at t = 0, both marked `$`: two charges for one upload, and nothing failed. Drawn
# as the calls each invocation made, in the order they happened in this run:
#
# ```mermaid
# sequenceDiagram
#     participant D1 as delivery 1
#     participant T as ledger table
#     participant D2 as delivery 2 (the copy)
#     participant P as provider
#     D1->>T: get_record: nothing
#     D1->>T: put_in_progress (conditional): written
#     Note over D1: before_charge: the copy starts here
#     D2->>T: get_record: in_progress
#     Note over D2: "an earlier attempt failed": skip the put
#     D2->>P: charge
#     D2->>T: add_entry, mark_done
#     D1->>P: charge (again)
#     D1->>T: add_entry, mark_done (over done)
# ```
#
# Each invocation got its own charge back, and the second `mark_done` wrote its receipt over the
# first one's, so the record remembers only one of the two:

# %%
for a in concurrent.trace:
    print(f"delivery {a.delivery} was charged {a.result['processed'][0]['charge_id']}")
record = next(item for item in concurrent.items if item["pk"].startswith("charge#"))
print(f"the record says {record['status']}, receipt {record['result']['charge_id']}")

# %% [markdown]
# The copy's `get_record` found `in_progress`, and to robust `in_progress` means "an earlier attempt
# failed, try again". It cannot tell a failed attempt from one that is still running, because the
# record does not say *who* is working or *until when*. The conditional put does not help either:
# the copy never tries it, since a record already exists.
#
# Where exactly does the copy have to land to do damage? Move it along the first invocation's
# steps, and switch handlers: claim-first stands down at every step (its one put is the whole
# guard), robust charges twice until the record says `done`, and keyed makes the copy wait
# (`WorkInProgress`) and retry a minute later.

# %%
# NBVAL_IGNORE_OUTPUT
views.copy_explorer()

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore_copy("robust", "before_charge")

# %% [markdown]
# ## What the table and the queue hold afterwards
#
# Back in this chapter's world, after the poison and the redrive: the record is `done` with the
# charge's receipt as its result, alice's entry counts one charge of 500 cents, and the failure
# queue is empty again because the redrive deleted the message it handled.

# %%
views.items_frame(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# Set `my_step` to the step of the first invocation at which a concurrent copy can arrive without
# robust charging twice. The steps are `before_charge`, `charged` and `recorded`.

# %%
my_step = "before_charge"  # your answer here

# %%
trial = leases.copy_at("robust", my_step)
if trial.charges == 1:
    print(f"Right: a copy arriving at {my_step} finds the record done and stands down "
          f"({leases.last_status(trial, delivery=2)}). Before that, done has not been written yet.")
else:
    print(f"Not {my_step}: the copy arriving there charged too ({trial.charges} charges). The first "
          f"invocation had not written done yet, so the copy read in_progress and went to work.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# `my_step = "recorded"`. Only after `mark_done` does the record say the work is finished; at
# `before_charge` and at `charged` it still reads `in_progress`, which robust treats as "try
# again". The fix is not a later step but a record that says who holds the work and until when:
# a lease, in chapter 06.
# </details>
#
# ## Summary
#
# * The robust record moves `in_progress` -> `done` and says how far the work got, so a failed
#   charge is retried and, when the retries run out, lands in the failure queue with its record.
# * The on-failure destination receives Lambda's invocation record: the original event plus why it
#   stopped, enough to redrive the work once the cause is fixed.
# * `in_progress` cannot tell "failed earlier" from "running right now": a concurrent copy reads it
#   and charges again.
#
# **Next:** [06 Charge, then die](06_charge_then_die.ipynb)
