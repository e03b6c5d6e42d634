# %% [markdown]
# # 08 Powertools, side by side
#
# Where does Powertools' idempotency utility protect a charge, and what does each guard cost?
#
# **After this chapter you can say where Powertools protects a charge, close its gap, and price each
# pattern on DynamoDB's bill.**
#
# Most teams will not write the idempotent handler of chapters 02-06 by hand. They reach for the `idempotency`
# utility of Powertools for AWS Lambda. Here it guards the same charge as every other handler: the
# provider call and the ledger entry, with faults in the same places. It writes to DynamoDB on the
# same local backend and runs in the same local Lambda runtime. Every row below comes from a run.

# %% [markdown]
# ## Setup

# %%
import pandas as pd
from aws_lambda_powertools.utilities.idempotency.base import IdempotencyHandler
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

from idem import views
from idem.core.handlers.keyed import KeyedLedger
from idem.cost import bill
from idem.explore import powertools as pt
from idem.sim import powertools_entry as pe
from idem.lessons.shipping import powertools_runs as runs
from idem.explore import scenarios as sc

world, table = runs.chapter_world()  # a fresh local world, with a table for Powertools' records
print(f"ledger {world.ledger_table}, provider {world.provider_table}, Powertools table {table}")
print(f"failure queue {world.queue_name}, clock at t={world.clock.t:.0f} s")


# %% [markdown]
# ## The handler, as you write it
#
# Powertools' `@idempotent` decorator wraps a Lambda handler. Before the handler runs, it claims
# a record for the event's key in a DynamoDB table of its own. After, it stores the handler's
# answer there, and a repeat of the event gets that answer back without running the handler.
#
# The key is a **JMESPath** expression: a query language for JSON documents. `Records[0].s3` picks
# the first record's `s3` part of the event, and `[bucket.name, object.key]` makes a list of two
# values from it. Here is a handler for S3 uploads, with its configuration:

# %%
views.show_lines(pt.HANDLER_MODULE, "PRICE_CENTS")

# %% [markdown]
# Three choices in it come from this chapter's runs, below:
#
# * The key adds the `sequencer` to the bucket, the name and the `versionId`: without versioning,
#   the `versionId` is None.
# * The handler passes its own key to the provider, a hash of the same fields.
# * It books the charge once, with a conditional put: Powertools deletes its record when the
#   handler raises, and the retry runs the whole handler again.
#
# Its key names the upload, like chapter 03's `upload` identity, so a retried PUT is charged
# twice. JMESPath reads only the event, and the order's id is inside the file. To charge once per
# order, read the file first, and guard a function of the order with `idempotent_function`, its
# key the `order_id`
# ([idempotent_function](https://docs.aws.amazon.com/powertools/python/latest/api/utilities/idempotency/idempotency.html)).
# This chapter keeps the upload's key, to compare the guards on the same work as chapters 04-05.
#
# The local runtime runs this module as Lambda would: its settings from the environment, boto3's
# default session on the local AWS, and `make_provider` swapped for the provider stand-in.

# %%
pd.DataFrame([
    runs.handler_row("two orders, versioning off, each sent twice",
             pt.run_handler([b"v1", b"v2"], versioned=False, redeliver_after=5.0)),
    runs.handler_row("an error after the ledger write",
                     pt.run_handler([b"v1"], fault=runs.after_ledger("exception"))),
    runs.handler_row("a crash after the ledger write",
                     pt.run_handler([b"v1"], fault=runs.after_ledger("crash"))),
    runs.handler_row("an error after every charge call",
                     pt.run_handler([b"v1"], fault=runs.POISON)),
])

# %% [markdown]
# The two orders are charged once each, however often their events come. An error or a crash
# after the ledger write leaves one charge, booked once. A poison event moves money once, books
# nothing, and lands in the failure queue, where chapter 04's alarm finds it.
#
# ## The same charge, in the matrix
#
# To flip one option at a time and fail at every fault point, the matrix runs a variant of that
# handler, `idem.sim.powertools_entry`. Its settings come from the environment, and it wraps the
# same charge step as every other handler with `idempotent_function`, the decorator for a function
# inside a handler. Its key is the recipe of chapter 03 over the decoded record: `bucket`, `key`
# and `version_id`. The charge it guards:

# %%
views.show_source(pe.PowertoolsCharge._charge)

# %% [markdown]
# Its records expire. An `INPROGRESS` record expires at the invocation's deadline, which the
# Lambda context tells it (`register_lambda_context`): a crashed claim then stops blocking its
# retries, like a lease (chapter 06). A `COMPLETED` record expires after `expires_after_seconds`.
# Powertools reads the wall clock to set those times. On AWS nothing changes. Here the
# local runtime makes it read the virtual clock instead, as
# [the appendix](13_appendix_the_local_aws.ipynb#powertools-clock) shows.
#
# One upload, delivered twice, five seconds apart:

# %%
first_run = sc.Scenario("powertools", delivery="duplicate")
runtime = pt.runtime_for(world, pt.env_for(world, first_run, table), first_run)
event = world.event(world.upload(sc.ORDER_KEY, b"sku,qty\nledger,1\n"))
runtime.send(event)
runtime.send(event, at=5.0)
views.attempts_frame(runtime.run(), columns=("t (s)", "delivery", "container", "steps", "outcome",
                                            "dynamodb_calls", "result"))

# %% [markdown]
# The first delivery makes a conditional `PutItem` of an `INPROGRESS` record, then the ledger
# entry, then an `UpdateItem` to `COMPLETED` with the result. The duplicate makes only the put.
# It fails, and DynamoDB hands back the stored record in the same call: the `ALL_OLD` answer of
# chapter 02, which keyed's claim uses too.

# %% [markdown]
# ## Every option, and the chapter that explains it
#
# Each option of the utility answers a problem an earlier chapter ran into:
#
# | run below as | the option | chapter | why it exists |
# | --- | --- | --- | --- |
# | key with version | `event_key_jmespath="[bucket, key, version_id]"` (on the decoded record, as every key here) | 03 | the key comes from the work, not the attempt |
# | key without version | `event_key_jmespath="[bucket, key]"` (a bad key) | 03 | a re-upload under the same name is new work |
# | validate the etag | `payload_validation_jmespath="etag"` | 03, 06 | same key, other payload: refuse loudly, like the provider |
# | no version id | `[bucket, key, version_id]`, versioning off | 03 | chapter 03's `version` recipe, with `version_id` None |
# | raise on no key | `event_key_jmespath="version_id"`, `raise_on_no_idempotency_key=True` | 03 | a key with nothing in it is refused |
# | let no key through | the same, `raise_on_no_idempotency_key=False` | 03 | or else the charge runs unguarded |
# | add the sequencer | `[bucket, key, version_id, sequencer]`, versioning off | 03 | the sequencer tells two uploads apart |
# | expire after 1 hour | `expires_after_seconds=3600` (the default) | 07 | a duplicate can arrive hours later |
# | expire after 1 day | `expires_after_seconds=86400` | 07 | the record must outlive the latest duplicate |
# | local cache | `use_local_cache=True` | 01, 02 | memory is per container: a hint, never the guard |
# | in-progress expiry | `register_lambda_context` | 06 | a crashed claim must not block its retries |
# | replay the result | nothing: the default (`response_hook` only edits the replayed answer) | 05, 06 | a duplicate returns the stored result, not a new charge |
#
# The table below runs each one in a fresh world and counts what happened.

# %%
version_only = dict(versioned=False, redeliver_after=5.0, POWERTOOLS_KEY="version_id")
name_only = "[bucket, key]"
pd.DataFrame([
    runs.option_row("key with version", pt.run_uploads([b"v1", b"v2"])),
    runs.option_row("key without version",
                    pt.run_uploads([b"v1", b"v2"], POWERTOOLS_KEY=name_only)),
    runs.option_row("validate the etag", pt.run_uploads([b"v1", b"v2"], POWERTOOLS_KEY=name_only,
                                                        POWERTOOLS_VALIDATE="etag")),
    runs.option_row("no version id", pt.run_uploads([b"v1", b"v2"], versioned=False)),
    runs.option_row("raise on no key", pt.run_uploads([b"v1"], **version_only)),
    runs.option_row("let no key through", pt.run_uploads([b"v1"], **version_only,
                                                         POWERTOOLS_RAISE_ON_MISSING_KEY="0")),
    runs.option_row("add the sequencer",
                    pt.run_uploads([b"v1", b"v2"], versioned=False,
                                   POWERTOOLS_KEY="[bucket, key, version_id, sequencer]")),
    runs.option_row("expire after 1 hour", pt.run_uploads([b"v1"], redeliver_after=7200,
                                               RECORD_TTL_SECONDS="3600")),
    runs.option_row("expire after 1 day", pt.run_uploads([b"v1"], redeliver_after=7200)),
    runs.option_row("local cache", pt.run(sc.Scenario("powertools", delivery="duplicate"),
                               POWERTOOLS_LOCAL_CACHE="1")),
    runs.option_row("in-progress expiry", pt.run(sc.Scenario("powertools", "after_charge", "once",
                                                  how="crash", timeout=900))),
    runs.option_row("replay the result", pt.run(sc.Scenario("powertools", delivery="duplicate"))),
])

# %% [markdown]
# Read it row by row:
#
# * The first three rows upload two versions of one file. A key without the version lets the second
#   upload through as a "duplicate": one charge for two orders, and nothing alerts.
# * Payload validation turns that into a visible failure.
# * Versioning off, the key `[bucket, key, version_id]` still charges once for two orders, and nothing is
#   raised. Powertools treats a key as missing only when *every* value it selects is None. Here
#   the bucket and the name are there, so `[bucket, key, None]` is a key, the same for both
#   uploads. The library's check, from
#   [`persistence/base.py`](https://github.com/aws-powertools/powertools-lambda-python/blob/develop/aws_lambda_powertools/utilities/idempotency/persistence/base.py):

# %%
views.show_source(BasePersistenceLayer.is_missing_idempotency_key)

# %% [markdown]
# * A key of `version_id` alone is all None without versioning, so
#   `raise_on_no_idempotency_key=True` (this variant's setting; Powertools' own default is False)
#   fails visibly. Switching it off lets both deliveries through, and the duplicate charges again.
# * Adding the `sequencer` makes the key right in both kinds of bucket: it differs per upload and
#   is the same on every copy of one event (the sequencer is what chapter 03's `content`
#   recipe relies on too).
# * The one-hour default expiry lets a duplicate two hours late charge again.
# * The local cache answers a warm duplicate without a DynamoDB call for the record.
# * A crashed invocation with a 900 s timeout holds its `INPROGRESS` record until its deadline.
#   Lambda's retries are turned away, and the event lands in the failure queue. Its errors:
#   `ExitError` is Lambda's `Runtime.ExitError`, the error of a process that died.

# %% [markdown]
# ## The matrix, keyed and powertools side by side

# %%
side_by_side = [sc.run(s) for s in sc.headline_scenarios(["keyed", "powertools"])]
views.matrix_table(side_by_side)

# %% [markdown]
# They agree on every row but the two where money moved and then the function raised
# (`after_charge`). Powertools' answer to an exception is to *delete its record*. That lets the
# retry run the function again, and the retry charges again. Keyed charges once and leaves the
# poison event in the failure queue. Here is where the library does that:

# %%
views.show_source(IdempotencyHandler._get_function_response)

# %%
gap = next(o for o in side_by_side
           if o.scenario.handler == "powertools" and o.scenario.fault == "after_charge")
fig = views.timeline(gap)

# %% [markdown]
# A crash is different: no `except` runs, so the record stays `INPROGRESS` until the in-progress
# expiry, the invocation's deadline. With a 30 s timeout, Lambda's first retry comes after that
# deadline: it takes the record over and charges again. With a 900 s timeout, every retry is
# refused with `IdempotencyAlreadyInProgressError` until Lambda gives up. The record then stays
# `INPROGRESS` in Powertools' own table, which chapter 07's auditor does not read. The auditor
# still finds the upload: the provider's charge has no ledger line, an account mismatch:

# %%
crashes = [sc.run(sc.Scenario(h, "after_charge", "once", how="crash", timeout=t))
           for h in ("keyed", "powertools") for t in (30, 900)]
views.outcome_frame(crashes, columns=("handler", "timeout", "charges", "ledger_charges",
                                      "invocations", "in_failure_queue", "record_status",
                                      "verdict"))

# %% [markdown]
# And the whole matrix (every fault point, times and delivery), verdicts counted per handler:

# %%
everything = [sc.run(s) for s in sc.all_scenarios(["keyed", "powertools"])]
views.outcome_frame(everything).pivot_table(index="verdict", columns="handler",
                                            values="charges", aggfunc="count", fill_value=0)

# %% [markdown]
# ## Closing the gap
#
# The library cannot know that money moved before the exception. Here are three ways to tell it,
# each inside the idempotent function:
#
# * **Catch after the side effect.** Once the provider's answer is in hand, no exception may reach
#   Powertools. Finish the bookkeeping and return normally, so the record becomes `COMPLETED`.
# * *Pass the key to the provider*, as keyed does (chapter 06). A retry that runs the function
#   again then gets the provider's replay instead of a second charge.
# * **Book once as well.** Pass the key, and write the ledger line with a conditional put keyed by
#   it. A function run again then finds the line and books nothing new.
#
# Two places to fail matter. The first, `after_charge`, is an error right after the charge call,
# as before. The second, `after_ledger`, is an error right after the ledger write has landed: its
# answer is lost, or the function dies before Powertools marks the record `COMPLETED`.

# %%
views.show_source(pe.PowertoolsCharge.charge_then_catch, pe.PowertoolsCharge.charge_and_book_once)

# %% [markdown]
# Each row below is one fix (`none` is the utility as most handlers use it). Each column is one
# fault point and how it struck. A cell gives the verdict, then two counts: the charges the
# provider made / the charges the ledger booked (`2/1`: two charged, one booked):

# %%
fix_runs = [(fix, sc.Scenario("powertools", point, "once", how=how))
            for fix in pe.FIXES for point in ("after_charge", pt.AFTER_LEDGER)
            for how in ("exception", "crash")]
fixes = [pt.run(s, fix=fix, fault=pt.fault_plan(s, fix)) for fix, s in fix_runs]
runs.fixes_frame(fix_runs, fixes)

# %% [markdown]
# * *Catching* only helps when the ledger write fails with an exception. At `after_charge` the
#   charge call itself raises, and the function cannot tell whether money moved. A crash skips
#   every `except` anyway.
# * *The provider's key* stops the second charge. But at `after_ledger`, Powertools deletes its
#   record and the retry runs the function again. The provider replays the charge, and the ledger
#   write runs a second time: one charge, booked twice, and nothing alerts.
# * **Booking once** as well ends every row exactly once.
#
# These are single runs. `idem.explore.powertools` runs every way a run of the matrix can go
# (each fault point, delivery and retry setting, and each `after_charge` run again at
# `after_ledger`), once per fix. The table is in
# [the reliability notes](../docs/reliability.md#powertools-every-schedule-per-fix). With the key
# and the booked-once line, no run there charges twice, books twice or loses work silently. None
# of them makes a zombie, though, and Powertools' update and delete carry no owner check.

# %% [markdown]
# ## Explore
#
# Any fault and delivery, with the handler to compare (pick `powertools` and `keyed`):

# %% tags=["nbval-ignore-output"]
views.explorer(handler="powertools", fault="after_charge", times="once")

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore("powertools", "after_charge", "once")

# %% [markdown]
# ## What each guard costs on DynamoDB's bill
#
# AWS does not bill calls. **On-demand** mode reserves no capacity ahead. In it, DynamoDB bills
# **request units**: a write unit for
# each KB a write touches, a read unit for each 4 KB a strongly consistent read returns.
# `idem.cost.bill` runs one upload per handler three ways. There is a first delivery, a duplicate
# delivered after it finished, and a retry after the function failed at `after_charge`.

# %% [markdown]
# A meter prices every request the function makes by DynamoDB's rules:
#
# * **1 KB per write unit, rounded up**, per item: a 1.2 KB item costs two
#   ([item sizes](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html),
#   [reads and writes](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)).
# * **A failed conditional write still bills**, as the write would have: on the larger of the
#   stored item and the new one. A duplicate whose claim fails pays for a write it did not make ([reads and writes](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)).
# * **An item written in a transaction (several writes that all happen or none do; below) bills
#   twice**: once to prepare it, once to commit it
#   ([transactions](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling)).
# * **An index write bills too.** Putting an item into a global secondary index costs write units of
#   its own ([indexes](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes)).
# * **4 KB per read unit** for a strongly consistent read, rounded up. An eventually consistent read
#   of up to 4 KB costs half a read unit
#   ([reads and writes](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)).
# * **TTL deletes are free.** Expired records leave the table without a write unit
#   ([TTL](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html)).
#
# The provider's own requests are its bill, not yours, and are left out.

# %%
bills = bill.bills()
print(views.price_note())
fig = views.bill_chart(bills)

# %% [markdown]
# What to notice:
#
# * A duplicate costs a write unit for every pattern that claims with a conditional write
#   (`claim_first`, keyed, Powertools): its claim fails, and a failed conditional write still
#   bills. Robust reads its record first instead, so its duplicate costs a read unit.
# * Naive's duplicate looks as cheap on this bill. It costs a second charge on the provider's.
# * A retry pays for the attempt that failed and for the one that finished.
# * These uploads have short names. keyed's claim also stores what its key is made from
#   (`source`). Under `ORDER_IDENTITY=object-name` or `upload` that is the object's name, so a
#   name near S3's limit of 1,024 bytes makes the claim cost at least two write units.
#
# The same numbers, one row per handler. Each cell holds the DynamoDB calls of one case, its write
# (W) and read (R) request units, and its dollars per million uploads at the price above:

# %%
views.bill_summary(bills)

# %% [markdown]
# ### What a transaction buys, and what it costs
#
# A **transaction** (`TransactWriteItems`) writes several items all-or-nothing: every item is
# written, or none is. It buys one guarantee across items, and it bills each of its items twice.
#
# A commit could be a transaction of three items: the record marked `done`, an entry that books
# the charge once, and the account's totals. Keyed's commit is one conditional `PutItem` instead,
# fenced to the claim's owner. The tables below call the two designs `transaction + counter` and
# `put + sparse index (keyed)`.

# %%
views.show_source(KeyedLedger.commit)

# %% [markdown]
# The put replaces the claim record with the ledger line: `done`, the result, the account, the cents
# and the charge id. The line has no `expires_at`, so it never expires. One item is never half
# written, so one write is all-or-nothing by itself.
#
# The totals come from a query on the sparse index of chapter 06: only a committed line has an
# `account`, so the index is written once per charge, at commit. So is a second sparse index,
# `by_day`, which the hourly reconciliation job of chapter 09 reads: each committed line
# costs two index writes.
#
# The meter runs both designs on the same claim, and a third that reads the totals by scanning the
# whole table. Here is a first delivery under each, request by request:

# %%
parts = views.itemise_designs()
print("\n".join(views.receipt_lines(parts)))
fig = views.designs_chart(parts)

# %% [markdown]
# The transaction is one call with the most write units: three items, each billed twice. The put is
# one item billed once, plus its entries in the two indexes. The designs side by side, with what reading
# an account's totals costs once the table holds some lines:

# %%
views.designs_frame(bill.commit_designs())

# %% [markdown]
# The index has a price on the read side too. A query on it reads every line of the account. That
# is cheap while the lines fit in 4 KB, and grows as they add up; the transaction's counter stayed
# one small item. A scan reads every item of the table, so it costs more with every line kept.
#
# Next to Powertools with the application's own ledger entry, keyed's first delivery costs one
# write unit more. Powertools writes its record twice (the put, then the update), and the function
# writes the entry: three. Keyed writes the claim and the line, and the line enters two indexes:
# four.

# %%
first = {b.handler: b.wru for b in bills if b.case == "first"}
keyed_units, powertools_units = first["keyed"], first["powertools"]
print(f"write units per first delivery: keyed {keyed_units:g}, powertools {powertools_units:g}")

# %% [markdown]
# ## When to use which
#
# * **Use Powertools** when every step of the guarded work is safe to run again: the provider
#   call with its key, the ledger write booked once. Its record is deleted on every exception, so
#   the function must be safe to run twice. It gives you the put-first claim, in-progress expiry from the context, expiry checked
#   in code, payload validation and a local cache, tested by many users.
# * *Configure it*: set `expires_after_seconds` to outlive your latest duplicate (hours, not the
#   one-hour default). Turn on `raise_on_no_idempotency_key`, and put the `sequencer` in the key if
#   versioning may be off. Pass the key (or your own) to the provider, and book the charge once.
# * *Write the keyed pattern* when the record and the ledger line must be one write. Or when a
#   zombie must not overwrite its successor: keyed's commit is fenced to the owner, while Powertools'
#   update and delete carry no owner check. Or when a charge that fails after the money moved must
#   leave an alarm rather than a deleted record.

# %% [markdown]
# ## What the Powertools table holds afterwards
#
# This chapter's world ran one upload twice. The Powertools table holds one `COMPLETED` record with
# the stored result, which is what a duplicate gets back:

# %%
views.items_frame(pt.powertools_items(world, table), width=32)

# %% [markdown]
# ## Try it
#
# The bill follows the rules above, and you can now apply them to requests no chart has shown. The
# cell after yours makes three requests to an empty table and meters them:
#
# 1. a `PutItem` of an item of 2.5 KB;
# 2. the same `PutItem` again, with the condition `attribute_not_exists(pk)`, which now fails;
# 3. a transaction putting two new items of 600 bytes each.
#
# Predict the write units of each.

# %%
my_prediction = {  # your answers here: write units per request
    "put a 2.5 KB item": None,
    "put it again, condition failing": None,
    "transaction putting two 600-byte items": None,
}

# %%
print(views.check_units(my_prediction, world.dynamodb))

# %% [markdown]
# <details><summary>Solution</summary>
#
# `3`, `3` and `4`. The 2.5 KB item rounds up to 3 KB, so three write units. The failed put bills
# as if it had written the item, the larger of the stored and the new one: three again. Each
# 600-byte item rounds up to 1 KB, and a transaction bills every item twice: 2 x 1 x 2 = 4.
# </details>
#
# ## Summary
#
# * Powertools protects a charge against duplicates, concurrent copies and failures before the
#   charge. Each option answers an earlier chapter: the key (03), the claim (02), in-progress expiry
#   as a lease (06), expiry (07).
# * It does not protect a charge followed by an error: it deletes its record, and the retry charges
#   again. A crash ends the same way once the in-progress expiry passes. Passing the key to the
#   provider stops the second charge. Booking the charge once stops the second ledger entry.
# * With versioning off, chapter 03's `version` recipe `[bucket, key, version_id]` is still a key,
#   and a second upload of one name is never charged. Add the `sequencer`. To charge per order,
#   key a function of the order by its `order_id`.
# * On DynamoDB's bill, a duplicate costs about one unit for every guard: a write unit for a
#   failed conditional put, a read unit for robust's read. A transaction buys
#   all-or-nothing across items at twice the units per item, which is why keyed commits one item.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [09 Deploy to AWS](09_deploy_to_aws.ipynb)
