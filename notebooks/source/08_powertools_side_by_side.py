# %% [markdown]
# # 08 Powertools, side by side
#
# **After this chapter you can read every option of Powertools for AWS Lambda's idempotency
# utility as the answer to a problem from an earlier chapter, say exactly where it protects a
# charge and where it does not, close that gap, and decide when the library is enough.**
#
# Most teams will not hand-roll the scribe from chapters 02-06: they will reach for Powertools'
# `idempotency` utility. Here it guards the same charge as every other handler (the provider
# call and the ledger entry, with the faults in the same places), over DynamoDB on the same
# local backend, through the same local Lambda runtime. Its rows below come from running it.

# %% [markdown]
# ## Setup

# %%
from contextlib import ExitStack

import pandas as pd
from aws_lambda_powertools.utilities.idempotency.base import IdempotencyHandler

from idem import views
from idem.local import bench
from idem.local import powertools as pt
from idem.local import powertools_entry as pe
from idem.local import scenarios as sc
from idem.local.world import LocalWorld

stack = ExitStack()
world = stack.enter_context(LocalWorld())
table = stack.enter_context(pt.idempotency_table(world))
print(f"ledger {world.ledger_table}, provider {world.provider_table}, Powertools table {table}, "
      f"failure queue {world.queue_name}, clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## The same charge, wrapped
#
# `idempotent_function` wraps the charge step and the ledger entry. The key is a JMESPath
# expression over the decoded S3 record (`bucket`, `key`, `version_id`: chapter 03's recipe),
# the persistence layer writes to its own table through a DynamoDB client whose calls are
# counted, and every invocation registers its Lambda context, so that an `INPROGRESS` record
# expires at the invocation's deadline.

# %%
views.show_source(pe.PowertoolsCharge.__init__, pe.PowertoolsCharge.__call__,
                  pe.PowertoolsCharge._charge)

# %% [markdown]
# Powertools reads the wall clock for its expiry and in-progress expiry. For the local runtime,
# its modules read the virtual clock instead while an invocation runs (on AWS nothing is
# patched):

# %%
views.show_source(pe.powertools_time)

# %% [markdown]
# One upload, delivered twice, five seconds apart:

# %%
first_run = sc.Scenario("powertools", delivery="duplicate")
runtime = pt.runtime_for(world, pt.env_for(world, first_run, table), first_run)
event = world.event(world.upload(sc.ORDER_KEY, b"sku,qty\nledger,1\n"))
runtime.send(event)
runtime.send(event, at=5.0)
views.attempts_frame(runtime.run())[["t (s)", "delivery", "container", "steps", "outcome",
                                     "dynamodb_calls", "result"]]

# %% [markdown]
# Two DynamoDB calls for the first delivery (a conditional `PutItem` of an `INPROGRESS` record,
# then an `UpdateItem` to `COMPLETED` with the result), one for the duplicate: the put fails,
# and DynamoDB hands back the stored record in the same call, as keyed's claim does (chapter 02).

# %% [markdown]
# ## Every option, and the chapter that explains it
#
# Each option of the utility exists because of a problem an earlier chapter ran into. The
# table runs each one, in a fresh world, and says what it changed.

# %%
def demo(option, chapter, why, outcome):
    return {"option": option, "chapter": chapter, "why it exists": why, **pt.summary(outcome)}


unversioned = dict(versioned=False, redeliver_after=5.0, POWERTOOLS_KEY="version_id")
options = pd.DataFrame([
    demo("event_key_jmespath=[bucket, key, version_id]", "03 choosing a key",
         "the key comes from the work, not the attempt",
         pt.run_uploads([b"v1", b"v2"])),
    demo("event_key_jmespath=[bucket, key] (a bad key)", "03 choosing a key",
         "a re-upload under the same name is new work",
         pt.run_uploads([b"v1", b"v2"], POWERTOOLS_KEY="[bucket, key]")),
    demo("payload_validation_jmespath=etag", "03 choosing a key, 06 charge then die",
         "same key, other payload: refuse loudly (like the provider)",
         pt.run_uploads([b"v1", b"v2"], POWERTOOLS_KEY="[bucket, key]", POWERTOOLS_VALIDATE="etag")),
    demo("raise_on_no_idempotency_key=True", "03 choosing a key",
         "versioning off: no versionId, no key",
         pt.run_uploads([b"v1"], **unversioned)),
    demo("raise_on_no_idempotency_key=False", "03 choosing a key",
         "...otherwise the charge runs unguarded",
         pt.run_uploads([b"v1"], POWERTOOLS_RAISE_ON_MISSING_KEY="0", **unversioned)),
    demo("expires_after_seconds=3600 (the default)", "07 time and the auditor",
         "a duplicate can arrive hours later",
         pt.run_uploads([b"v1"], redeliver_after=7200, RECORD_TTL_SECONDS="3600")),
    demo("expires_after_seconds=86400", "07 time and the auditor",
         "the record must outlive the latest duplicate",
         pt.run_uploads([b"v1"], redeliver_after=7200)),
    demo("use_local_cache=True", "01 naive scribe, 02 atomic claim",
         "memory is per container: a hint, never the guard",
         pt.run(sc.Scenario("powertools", delivery="duplicate"), POWERTOOLS_LOCAL_CACHE="1")),
    demo("register_lambda_context (in-progress expiry)", "06 charge then die",
         "a crashed claim must not block its retries",
         pt.run(sc.Scenario("powertools", "after_charge", "once", how="crash", timeout=900))),
    demo("returned-value replay (response_hook)", "05 robust scribe, 06 charge then die",
         "a duplicate returns the stored result, not a new charge",
         pt.run(sc.Scenario("powertools", delivery="duplicate"))),
])
options

# %% [markdown]
# Read it row by row. A key without the version lets the second upload through as a
# "duplicate" (one charge for two orders, and nothing alerts); payload validation turns that
# into a visible failure. With no key at all, the default raise fails visibly; switching it off
# charges twice. The one-hour default expiry lets a duplicate two hours late charge again. The
# local cache answers a warm duplicate with no DynamoDB call at all (2 calls instead of 3). And a
# crashed invocation with a 900 s timeout holds its `INPROGRESS` record until its deadline:
# the retries at +60 s and +180 s are turned away, and the event lands in the failure queue.

# %% [markdown]
# ## The matrix, keyed and powertools side by side

# %%
side_by_side = [sc.run(s) for s in sc.headline_scenarios(["keyed", "powertools"])]
views.matrix_table(side_by_side)

# %% [markdown]
# They agree on every row but the two where money moved and then the function raised
# (`after_charge`). Powertools' answer to an exception is to **delete its record**, so that the
# retry can run the function again, and the retry charges again: twice for `once`, three times
# for `always`, where keyed charges once and leaves the poison in the failure queue. Here is
# where the library does that:

# %%
views.show_source(IdempotencyHandler._get_function_response)

# %%
gap = next(o for o in side_by_side
           if o.scenario.handler == "powertools" and o.scenario.fault == "after_charge")
fig = views.timeline(gap)

# %% [markdown]
# A crash is different: no `except` runs, so the record stays `INPROGRESS` until the
# in-progress expiry, which is the invocation's deadline. With a 30 s timeout the retry at
# +60 s takes the record over and charges again; with a 900 s timeout the retries are refused
# with `IdempotencyAlreadyInProgressError` until the event is given up on, and the record
# stays `in_progress` for the auditor (chapter 07) to find:

# %%
crashes = [sc.run(sc.Scenario(h, "after_charge", "once", how="crash", timeout=t))
           for h in ("keyed", "powertools") for t in (30, 900)]
views.outcome_frame(crashes).assign(timeout=[o.scenario.timeout for o in crashes])[
    ["handler", "timeout", "charges", "ledger", "attempts", "dlq", "record", "verdict"]]

# %% [markdown]
# And the whole matrix (every fault point, times and delivery), verdicts counted per handler:

# %%
everything = [sc.run(s) for s in sc.all_scenarios(["keyed", "powertools"])]
views.outcome_frame(everything).pivot_table(index="verdict", columns="handler",
                                            values="charges", aggfunc="count", fill_value=0)

# %% [markdown]
# ## Closing the gap
#
# The library cannot know that money moved before the exception. Two ways to tell it, both
# inside the idempotent function:
#
# * **Catch after the side effect.** Once the provider's answer is in hand, no exception may
#   reach Powertools: finish the bookkeeping and return normally, so the record becomes `COMPLETED`.
# * **Pass the key to the provider**, as keyed does (chapter 06): a retry that runs the function
#   again gets the provider's replay instead of a second charge.

# %%
views.show_source(pe.PowertoolsCharge.charge_then_catch)

# %%
fixes = [pt.run(sc.Scenario("powertools", "after_charge", times, how=how), fix=fix)
         for fix in pe.FIXES for how in ("exception", "crash") for times in ("once", "always")]
views.outcome_frame(fixes).assign(
    fix=[f for f in pe.FIXES for _ in range(4)], how=[o.scenario.how for o in fixes])[
    ["fix", "how", "times", "charges", "ledger", "attempts", "dlq", "record", "verdict"]]

# %% [markdown]
# Catching changes nothing here. `after_charge` loses the provider's answer: the charge call
# raises, and the function cannot tell whether money moved, so there is nothing safe to catch.
# A crash skips every `except` anyway. Only the provider's key covers every case, and a poison
# that keeps failing after the charge still moves money once and lands in the failure queue
# (`needs_attention`) instead of charging three times. Catching does help when a later step
# fails, such as the ledger write after an answer that did arrive.

# %% [markdown]
# ## Explore
#
# Any fault and delivery, with the handler to compare (pick `powertools` and `keyed`):

# %%
# NBVAL_IGNORE_OUTPUT
views.explorer(handler="powertools", fault="after_charge", times="once")

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore("powertools", "after_charge", "once")

# %% [markdown]
# ## What each pattern costs
#
# `python -m idem bench` runs every handler on the same in-process backend in one process: the
# function's DynamoDB calls per first delivery and per duplicate (records and ledger entries), and
# events per CPU-second, with the ratio to keyed. The call counts do not change from run to run:

# %%
costs = bench.measure(events=20, rounds=2)  # `make bench` measures 500
calls = pd.DataFrame(costs["handlers"]).set_index("handler")
calls[["calls_first", "calls_duplicate"]]

# %% [markdown]
# The rates do (this machine, this moment), so this cell's output is not compared when the
# notebook is tested:

# %%
# NBVAL_IGNORE_OUTPUT
rates = calls[["rate_first", "rate_duplicate", "ratio_first", "ratio_duplicate",
               "runtime_share_first", "runtime_share_duplicate"]]
print(f"runtime overhead: {costs['runtime']['runtime_overhead_us']:.0f} us per event")
for target in costs["targets"]:
    print(f"[{'met' if target['met'] else 'MISSED'}] {target['target']}: {target['value']:g}")
rates

# %%
# NBVAL_IGNORE_OUTPUT
fig = views.bench_chart(rates)

# %% [markdown]
# What to notice: a duplicate costs one call for every pattern that keeps a record, and keyed's
# two calls for a first delivery include its ledger entry (one transaction), where robust and
# Powertools write the entry as a call of its own. The runtime's own share of an event stays
# a few percent. Rates on moto are a relative measure: on DynamoDB each call is a network round
# trip, so the call counts are what the bill and the latency follow.

# %% [markdown]
# ## When to use which
#
# * **Use Powertools** when the guarded work is one call you can make idempotent downstream (pass
#   the key to the provider), or has no side effect outside DynamoDB that an exception can strand.
#   It gives you the put-first claim, in-progress expiry from the context, expiry checked in
#   code, payload validation and a local cache, tested by many users. Set `expires_after_seconds`
#   to outlive your latest duplicate (hours, not the one-hour default), turn on
#   `raise_on_no_idempotency_key`, and pass its key (or your own) to the provider.
# * **Hand-roll the keyed pattern** when the record and the ledger entry must commit together
#   (one transaction), when a zombie must not overwrite its successor (the commit is fenced to
#   the owner; Powertools' update and delete carry no owner check), or when a charge that fails
#   after the money moved must leave an alarm rather than a deleted record.

# %% [markdown]
# ## What the table and the queue hold afterwards
#
# This chapter's world ran one upload twice: the Powertools table holds one `COMPLETED` record
# with the stored result, the ledger alice's one charge, and the failure queue nothing.

# %%
views.items_frame(pt.powertools_items(world, table), width=40)

# %%
views.items_frame(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# The function crashes right after the provider charged (`after_charge`, `how="crash"`). Pick the
# fix (`none`, `catch` or `provider_key`) that makes this row charge exactly once.

# %%
my_fix = "catch"  # your answer here

# %%
trial = pt.run(sc.Scenario("powertools", "after_charge", "once", how="crash"), fix=my_fix)
if trial.charges == 1 and trial.verdict == "exactly_once":
    print(f"Right: with {my_fix!r} the retry's charge is the provider's replay "
          f"({trial.charges} charge, {trial.verdict}).")
elif my_fix == "catch":
    print(f"Not 'catch': a crash runs no except clause, so the record stays INPROGRESS until the "
          f"in-progress expiry and the retry charges again ({trial.charges} charges). And when "
          f"the provider's answer is lost, there is no answer to catch.")
else:
    print(f"Not {my_fix!r}: {trial.charges} charges ({trial.verdict}). The retry runs the function "
          f"again; something must make its second charge the same as the first.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# `my_fix = "provider_key"`. A crash skips every `except`, so catching cannot help; the retry
# runs the function again after the in-progress expiry. Passing the key to the provider turns
# that second call into a replay of the first charge, whatever ended the first attempt.
# </details>
#
# ## Summary
#
# * Every Powertools option answers an earlier chapter: the key and its validation (03), the
#   claim that returns the old record (02), in-progress expiry as a lease (06), expiry that
#   must outlive the latest duplicate (07), a per-container cache that is only a hint (01).
# * It deletes its record when the function raises: a charge followed by an exception is
#   charged again; a crash holds the record until the in-progress expiry, then charges again.
# * Pass the key to the provider from inside the idempotent function and it charges once
#   whatever happens; keyed does the same and commits the record and the ledger together.
#
# **Next:** [09 Deploy to AWS](09_deploy_to_aws.ipynb)
