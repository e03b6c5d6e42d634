# %% [markdown]
# # 02 The atomic claim
#
# **After this chapter you can show, with real threads, why "look, then write" lets two copies of
# an event both charge, why one conditional write does not, and what DynamoDB hands back to the
# copy that loses.**
#
# Chapter 01 ended with a rule: "I already did this" must live in a store every container can see.
# The obvious way to use such a store is to look first and write second. That is one request too
# many. Two copies of the same event, running at the same moment in two containers, can both look
# before either writes, and both go on to charge. This chapter races real threads against the local
# DynamoDB to count how often that happens, and then replaces the two requests with one.

# %% [markdown]
# ## Setup
#
# The race machinery, the ledger, and a fresh local AWS with its clock at zero.

# %%
import json

from idem import views
from idem.core.handlers.keyed import KeyedLedger
from idem.core.ledger import Ledger
from idem.local import atomic, race as racing
from idem.local.race import race
from idem.local.world import LocalWorld
from idem.local import claims

world = LocalWorld()
ledger = world.ledger()
print(f"ledger table {world.ledger_table} (partition key: pk), clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## Two ways to claim a piece of work
#
# A *claim* is an item in the ledger table whose key names one piece of work: "this upload is
# taken". Here are the two ways of writing one that the race below compares. The first reads the
# item and writes it only if the read came back empty. The second is a single `PutItem` with
# `ConditionExpression="attribute_not_exists(pk)"`: DynamoDB writes the item only if no item with
# that key exists, and refuses otherwise. It is the claim `claim_first` uses.

# %%
views.show_source(racing.read_then_write, racing.conditional_put, Ledger.claim_once,
                  Ledger.put_if_absent)

# %% [markdown]
# In a race the read-then-write racers also wait at a barrier (`gap.wait()`) between their read
# and their write. Without it, who wins depends on how the operating system happens to schedule
# the threads, and the count changes from run to run. The barrier forces the unlucky
# interleaving every round: each thread has read "absent" before any thread writes. In production
# that interleaving is rare, which is what makes it dangerous: it survives testing.
#
# Each round, every thread is released at once (by another barrier) on a fresh key, the way S3
# and Lambda can start two copies of one event in two containers at the same moment. The whole
# race is `idem.local.race.race`; the two functions above are all that differs between the
# strategies.

# %% [markdown]
# ## The race
#
# Eight threads, fifty rounds, both strategies. One round is one upload, and every thread that
# wins the claim goes on to charge, so "winners" is "charges".

# %%
reports = [race(8, 50, strategy) for strategy in ("read_then_write", "conditional_put")]
for report in reports:
    print(report.summary())
fig = views.race_chart(reports)

# %% [markdown]
# With the read first, every thread won every round: 8 charges for each upload. With the
# conditional put, exactly one thread won each round, and the other seven were told no. The
# gap between a read and a write is exactly the size of the bug, and the only way to close it
# is to not have one: the check and the write must be one request.

# %% [markdown]
# ## Atomic on AWS, and made atomic here
#
# DynamoDB evaluates a condition and applies the write as one operation on the item, so two
# conditional puts of one key cannot both succeed. moto, the in-process AWS under this workbook,
# is not so careful: its `PutItem` reads the current item, checks the condition, then writes,
# with no lock in between. Under threads it has the same gap as the read-then-write claim above.
# `idem` closes it when a `LocalWorld` starts, with one lock around moto's DynamoDB methods:

# %%
views.show_source(atomic.make_dynamodb_atomic)

# %% [markdown]
# To see why the lock is there, remove it and widen moto's gap between its read and its write
# by 2 ms. The counts in this cell change from run to run (that is what a race looks like), so
# the workbook does not pin them.

# %%
# NBVAL_IGNORE_OUTPUT
# real threads against unpatched moto: how many rounds go wrong varies from run to run
print(claims.moto_as_shipped_race(threads=8, rounds=10).summary())

# %% [markdown]
# Then put the lock back and run the same widened gap again. Every round has exactly one winner:
# the lock, not luck, is what makes the local conditional put behave like DynamoDB's.

# %%
with atomic.widened_condition_window(0.002):
    print(race(8, 10, "conditional_put").summary())

# %% [markdown]
# ## What the loser hears
#
# A conditional put that fails raises `ConditionalCheckFailedException`. Add
# `ReturnValuesOnConditionCheckFailure="ALL_OLD"` and the same response also carries the item
# that stopped it. Here is everything boto3 hands back to the second of two puts of one key
# (without `ResponseMetadata`, the request id and headers that change on every call):

# %%
views.show_text(json.dumps(claims.failed_put_response(world), indent=2), "json")

# %% [markdown]
# The loser learns who holds the claim in the same call that told it no. The `keyed` handler's
# claim (chapter 06) builds on that: one put that also takes over a claim whose lease ran out,
# and on failure returns the record it lost to.

# %%
views.show_source(KeyedLedger.claim)

# %%
deadline = world.clock.now() + 30
keyed_ledger = KeyedLedger(world.dynamodb, world.ledger_table, now=world.clock.now)
first = keyed_ledger.claim("charge#example", owner="invocation-a", lease_until=deadline)
second = keyed_ledger.claim("charge#example", owner="invocation-b", lease_until=deadline)
print("first: ", first)
print("second:", second)

# %% [markdown]
# `invocation-b` now knows the work is `in_progress`, held by `invocation-a` until its lease
# ends, and it spent one call to find out.

# %% [markdown]
# ## What a claim costs
#
# Counted by the ledger itself: the DynamoDB calls the invocation that does the work makes to
# claim it, and the calls a duplicate makes before it stands down.

# %%
views.rows_frame(claims.claim_costs(world))

# %% [markdown]
# One call either way for the conditional put, and with `ALL_OLD` the duplicate also learns the
# record's state. Reading first costs an extra call on every first attempt and still needs the
# conditional put to be safe. One AWS fact a local run cannot show: a conditional write that
# fails still consumes write capacity, billed like a successful write of the same item (moto
# does not report capacity for a failed write). A duplicate is cheap, not free.

# %% [markdown]
# ## Explore
#
# Change how many threads race and for how many rounds. The read-then-write claim gives every
# thread a win in every round, however many there are; the conditional put gives exactly one.

# %%
# NBVAL_IGNORE_OUTPUT
views.race_explorer(threads=4, rounds=20)

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.race_explore(threads=4, rounds=20)

# %% [markdown]
# ## What the table holds afterwards
#
# Each race ran in a world of its own and deleted it at the end, so this chapter's ledger holds
# only the claims made directly above: the two puts of `charge#demo`, the leased claim, and the
# three cost measurements. Nothing ran through Lambda, so the failure queue is empty.

# %%
views.items_frame(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# A colleague writes the claim as one conditional put, but with their own condition. Set
# `my_condition` to a `ConditionExpression` that lets exactly one of eight racing threads win
# each round. The check races 8 threads for 10 rounds with your condition.

# %%
my_condition = "attribute_not_exists(id)"  # your answer here

# %%
try:
    attempt = claims.race_with_condition(my_condition, threads=8, rounds=10)
except ValueError as refused:
    print(refused)
else:
    most = max(attempt.winners_per_round)
    if attempt.clean_rounds == attempt.rounds:
        print(f"Right: one winner in each of {attempt.rounds} rounds. {attempt.summary()}")
    elif most == attempt.threads:
        print(f"Every thread won: up to {most} charges per upload. The condition held for every "
              "put, even after the first one landed. attribute_not_exists(x) is always true when "
              "no item ever has an attribute x: name the attribute every claim writes, the key pk.")
    elif most == 0:
        print("Nobody ever won, so every upload would be skipped. The condition fails on an empty "
              "slot: the first claim must succeed when there is no item yet.")
    else:
        print(f"Only {attempt.clean_rounds} of {attempt.rounds} rounds had one winner: {attempt.summary()}")

# %% [markdown]
# <details><summary>Solution</summary>
#
# `my_condition = "attribute_not_exists(pk)"`. The ledger's partition key is `pk`, and every item
# has one, so the condition is false exactly when the key is already taken. A condition on an
# attribute that no item has (`id`) is always true: the "conditional" put overwrites, and every
# racer wins. DynamoDB does not warn you; only a race shows it.
# </details>
#
# ## Summary
#
# * A read followed by a write lets every copy that read "absent" go on to charge: forced here,
#   8 charges per upload.
# * One conditional put is the claim: exactly one winner, and with `ALL_OLD` the loser learns who
#   holds the work in the same call (a failed write still consumes write capacity).
# * moto's conditional writes are not atomic under threads; `idem` adds one lock so the local
#   backend behaves like DynamoDB.
#
# **Next:** [03 Choosing a key](03_choosing_a_key.ipynb)
