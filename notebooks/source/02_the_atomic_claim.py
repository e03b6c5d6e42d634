# %% [markdown]
# # 02 The atomic claim
#
# How do two copies of one event agree which of them does the work?
#
# **After this chapter you can show why "look, then write" lets two copies both charge, and one conditional write does not.**
#
# Chapter 01 ended with a rule: "I already did this" must live in a store every container can see.
# The obvious way to use such a store is to look first and write second. That is one request too
# many. Two copies of one event can run at the same moment, in two containers. Both can look
# before either writes, and both go on to charge.
#
# That is a **race**: two copies of the function running at once, with a result that depends on
# which step of each comes first. This chapter races real threads against the local DynamoDB. It
# forces the unlucky order every round, to show what happens when it comes. Then it lets the
# threads run freely and counts how often the order comes by itself. Last, it replaces the two
# requests with one.

# %% [markdown]
# ## Setup
#
# The ledger, the race, and a fresh local AWS with its clock at zero. The ledger table's
# **partition key** is `pk`: the attribute whose value names an item, one item per value.

# %%
from idem import views
from idem.core.ledger import Ledger
from idem.explore.race import race, read_then_write
from idem.lessons.scribes import claims
from idem.sim.world import LocalWorld

world = LocalWorld()
print(f"ledger table {world.ledger_table} (partition key: pk), clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## Two ways to take a piece of work
#
# A **claim** is an item in the ledger table that says "this piece of work is taken". Its key is
# the **idempotency key**: the name the handler gives one piece of work. It must be the same on
# every copy and every retry of the event. Here it is `charge#` and a name for the upload;
# chapter 03 decides what that name is made of.
#
# A claim is only worth something if one writer wins it. There are two ways to try:
#
# * Read the item, and write it if the read came back empty. `read_then_write` below does that.
#   It is the version the race uses, so it waits at a barrier (`gap.wait()`) between its read
#   and its write; more on that below.
# * Write it with a **conditional write**: a DynamoDB write that only happens if a condition on
#   the stored item holds, checked and written in one step. `Ledger.put_if_absent` is one
#   `PutItem` with `ConditionExpression="attribute_not_exists(pk)"`. DynamoDB writes the item
#   only if no item with that key exists, and refuses otherwise. `Ledger.claim_once` uses it.

# %%
views.show_source(read_then_write, Ledger.claim_once, Ledger.put_if_absent)

# %% [markdown]
# A claim also carries `expires_at`: a time after which DynamoDB may delete the item by itself.
# Chapter 07 decides how long a claim must live; until then, it is a day.

# %% [markdown]
# Without the barrier, who wins depends on the order in which the operating system runs the
# threads, and the count changes from run to run. The barrier forces the unlucky interleaving
# every round: each thread has read "absent" before any thread writes. A later section takes the
# barrier away and counts how often that order comes by itself.
#
# Each round, every thread is released at once (by another barrier) on a fresh key. That is how
# S3 and Lambda can start two copies of one event in two containers at the same moment.

# %% [markdown]
# ## The race
#
# Eight threads, fifty rounds, both ways. One round is one upload, and every thread that wins the
# claim goes on to charge, so "winners" is "charges".

# %%
reports = [race(8, 50, strategy) for strategy in ("read_then_write", "conditional_put")]
for report in reports:
    print(report.summary())
fig = views.race_chart(reports)

# %% [markdown]
# With the read first, every thread won every round: each upload would be charged by every thread.
# With the conditional put, exactly one thread won each round, and the others were told no. The
# gap between a read and a write is exactly the size of the bug. The only way to close it is to
# not have one: the check and the write must be one request.

# %% [markdown]
# ## Without the barrier
#
# Now the same `read_then_write`, with nothing holding a thread between its read and its write.
# Its `gap` is a barrier of one party, which lets its only thread straight through. Every round
# still starts eight threads at once on a fresh key. Who wins is now up to the thread scheduler.
# Here are three runs of fifty rounds:

# %% tags=["nbval-ignore-output"]
for _ in range(3):
    print(claims.unrigged_race(8, 50).summary())

# %% [markdown]
# The counts change from run to run: run the cell again to see. So the stored notebook does not
# pin them. What does not change is that a round with two or more winners comes. The cell below
# races until one does, and pins only that:

# %%
raced = claims.rounds_until_a_double_win(threads=8, limit=2000)
print("Without the barrier, a round with two or more winners came within 2,000 rounds:",
      "yes" if raced else "no")

# %% [markdown]
# So the unlucky order is not a trick of the barrier. Left alone, threads on one machine hit it
# often. Copies in two containers on AWS may run on separate machines, with network delays
# between them. Their rate is yours to measure, not this notebook's. No rate above zero is safe
# for money.
#
# DynamoDB checks the condition and applies the write as one step on the item. So two conditional
# puts of one key cannot both succeed. The local DynamoDB needed a lock to behave the same under
# threads: [the appendix](13_appendix_the_local_aws.ipynb#atomic-moto) shows it, and what goes
# wrong without it.

# %% [markdown]
# ## What the loser hears
#
# A conditional put that fails raises `ConditionalCheckFailedException`. Add
# `ReturnValuesOnConditionCheckFailure="ALL_OLD"`, and the same response also carries the item
# that stopped it, under `Item`.
#
# These two puts write a claim with one attribute `claim_once` does not write: `owner`, the
# invocation that holds the claim (`first-invocation`, then `second-invocation`). They write no
# `source` and no `expires_at`. Chapter 06's handler writes an `owner` too.
#
# Here is what boto3 hands back to the second put. `Item` is hidden: how to read the owner out of
# it is this chapter's exercise. The `ResponseMetadata` is left out too: its request id and headers
# change on every call.

# %%
views.show_json(views.lost_put(world, "charge#demo", holder="first-invocation"), hide=("Item",))

# %% [markdown]
# The copy that loses should **stand down**: stop, without doing the work. It also learns who holds
# the claim, in the same call that told it no. The handler of chapter 06 builds its claim on that.

# %% [markdown]
# ## What a claim costs
#
# Counted where the calls leave the process: the DynamoDB calls the copy that does the work makes
# to take it, and the calls a duplicate makes before it stands down.

# %%
views.rows_frame(views.claim_costs(world))

# %% [markdown]
# The conditional put costs one call either way. With `ALL_OLD`, the duplicate also learns who
# holds the work. Reading first costs an extra call on every first attempt, and it still needs the
# conditional put to be safe.
#
# One AWS fact a local run cannot show: a conditional write that fails still consumes write
# capacity, billed like a successful write of the same item
# ([AWS](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)).
# moto does not report capacity for a failed write. A duplicate is cheap, not free.

# %% [markdown]
# ## Explore
#
# Change how many threads race and for how many rounds. The read-then-write claim gives every
# thread a win in every round, however many there are; the conditional put gives exactly one.

# %% tags=["nbval-ignore-output"]
views.race_explorer(threads=4, rounds=20)

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.race_explore(threads=4, rounds=20)

# %% [markdown]
# ## What the table holds afterwards
#
# Each race ran in a table of its own and deleted it at the end. So this chapter's ledger holds
# only the claims made directly above: `charge#demo`, and one claim for each cost measurement.
# They differ by how they were written. `claim_once` wrote `charge#cost#0` and `#2`, with an
# `expires_at`. The puts with `ALL_OLD` wrote `#1` and `charge#demo`, with an `owner` and nothing
# else. Nothing ran through Lambda, so the failure queue is empty.

# %%
views.compact_items(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# Your handler lost a claim, and its log should say who holds the work, and until when. Write
# `holder_of(response)`: given what boto3 hands back to a failed put with `ALL_OLD`, return a pair,
# the holder's `owner` as a plain string and its claim's `expires_at` as a whole number of
# seconds. The check makes new claims with an `expires_at`, held by holders you have not seen,
# loses a put to each, and calls your function. First predict how the response writes the owner
# and the number. Then print the response inside your function and compare.

# %%
def holder_of(response):
    return None  # your answer here


# %%
print(claims.check_holder_of(holder_of, world))

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def holder_of(response):
#     item = response["Item"]
#     return item["owner"]["S"], int(item["expires_at"]["N"])
# ```
#
# With `ALL_OLD`, a failed put's response carries the stored item under `Item`, in DynamoDB's
# typed format: every value sits under its type, `S` for a string and `N` for a number. A number
# travels as a string, so that no precision is lost on the way, and your code turns it back.
# (`idem.core.dynamo.from_item` turns such an item into plain values. The `boto3.resource`
# interface would not help here: the item in its error response stays in the typed format.)
# One more trap worth knowing: a condition on an attribute no item has, such as
# `attribute_not_exists(id)`, is always true. That put overwrites, and every racer wins.
# </details>
#
# ## Summary
#
# * Two copies of one event agree through one conditional write: exactly one wins the claim, and
#   the others stand down.
# * "Look, then write" lets every copy that read "absent" go on to charge. Forced here, every thread
#   won every round; left to the scheduler, rounds with two or more winners still came.
# * With `ALL_OLD`, the loser learns who holds the work in the same call; a failed write still
#   costs write capacity.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [03 Choosing a key](03_choosing_a_key.ipynb)
