# %% [markdown]
# # 06 Charge, then die
#
# **After this chapter you can point at the window between the charge and the commit, explain why
# no record on your side of the API can close it, close it with the provider's idempotency key,
# and size a lease so that a dead invocation neither blocks its retries nor commits over its
# successor.**
#
# Every handler in this workbook does two things in two different systems: it asks the payment
# provider to move money, and it writes down in its own DynamoDB table that it did. There is no
# transaction that spans both. Between the moment the provider says "charged" and the moment the
# record says `done` there is a window, and a function can die in it: a timeout while writing the
# ledger, the process running out of memory, a deploy that recycles the container.

# %% [markdown]
# ## Setup

# %%
import json

from idem import views
from idem.local.boundary import FaultPlan
from idem.core.handlers import common
from idem.core.handlers.keyed import KeyedCharger, KeyedLedger
from idem.local import scenarios as sc
from idem.local.runtime import LocalLambda
from idem.local.world import LocalWorld
from idem.core.provider import IdempotencyKeyReused, Provider
from idem.local import leases

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, provider {world.provider_table}, "
      f"failure queue {world.queue_name}, clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## The window
#
# The fault point `after_charge` sits right after the provider call, in the charge step all
# handlers share: money has moved, and nothing on our side knows yet.

# %%
views.show_source(common.charge_step)

# %% [markdown]
# A function can leave that window in two ways. It can **raise** (an exception the handler could
# in principle catch), or it can **crash**: the process dies, and no `except` or `finally` runs.
# On Lambda both are a function error, and both are retried about a minute later. Here is
# robust (chapter 05) and keyed, each under both:

# %%
window = [sc.run(sc.Scenario(handler, "after_charge", "once", how=how))
          for handler in ("robust", "keyed") for how in ("exception", "crash")]
views.outcome_frame(window).assign(how=[o.scenario.how for o in window])[
    ["handler", "how", "charges", "ledger", "attempts", "dlq", "record", "verdict"]]

# %%
fig = views.timeline(window[1])

# %% [markdown]
# Robust charges twice either way. Its retry reads `in_progress`, which is exactly what the record
# should say, because the work really did not finish. The trouble is that "not finished" includes
# "the money already moved". Any record you could write to say so (`charged`, say) would be written
# *after* the charge, so the function can die before writing it too. The window only moves; it
# never closes, because the charge happens in someone else's system.
#
# Keyed charges once, both ways. Look at how.

# %% [markdown]
# ## Handing the key to the provider
#
# The keyed handler claims the work, and then passes **its own idempotency key** to the provider.
# It lives in one file, `idem/core/handlers/keyed.py`, the handler to copy; here are its three steps:

# %%
views.show_source(KeyedCharger.charge_once)

# %% [markdown]
# Payment APIs such as Stripe accept an idempotency key for exactly this reason. The provider
# stand-in keeps the same rules: a new key creates a charge; the same key with the same
# parameters replays the first charge and moves no money; the same key with different parameters
# is refused, because it can only be a bug in the caller.

# %%
views.show_source(Provider.charge, Provider._replay)

# %% [markdown]
# Run keyed with a crash right after the charge, in this chapter's world, so that the provider's
# answer can be read back:

# %%
crashing = LocalLambda(world, world.env("keyed"), fault=FaultPlan.at_point("after_charge", "once", how="crash"))
order = world.upload("alice/order-0001.csv", b"sku,qty\nledger,1\n")
crashing.send(world.event(order))
views.attempts_frame(crashing.run())[["t (s)", "attempt", "container", "steps", "outcome", "result"]]

# %% [markdown]
# The first attempt charged and died (`Runtime.ExitError`; its container is gone, so the retry
# starts cold in `c2`). The retry at t = 60 s found the first one's lease over, took the claim,
# and called the provider with the same key: the step says `replayed`. No money moved the second
# time, and the retry committed the one charge. The provider agrees:

# %%
for charge in world.provider().charges():
    print(f"{charge.id}  {charge.customer}  {charge.amount} cents  key {charge.idempotency_key[:32]}…")
print("ledger entry for alice (charges, cents):", world.ledger().entry("alice"))

# %% [markdown]
# There are two ledgers to keep honest: yours, which the claim and the commit protect, and the
# provider's, which only a shared key can protect.

# %% [markdown]
# ## The provider's side of the story
#
# A key names one request. Sending the same key again with the same parameters is a retry; sending
# it with a different amount means two different requests got the same name, and the provider
# refuses rather than guess. Ask it directly, with the key the handler used:

# %%
provider = world.provider()
first = provider.charges()[0]
again = provider.charge(customer="alice", amount=500, currency="usd", reference=first.reference,
                        idempotency_key=first.idempotency_key)
print(f"same key, same request: {again.id}, replayed={again.replayed}")
try:
    provider.charge(customer="alice", amount=700, currency="usd", reference=first.reference,
                    idempotency_key=first.idempotency_key)
except IdempotencyKeyReused as refused:
    print(f"same key, 700 cents: {type(refused).__name__}: {refused}")
print("charges at the provider:", len(provider.charges()))

# %% [markdown]
# This is why the key must come from the *work* (chapter 03) and the price must not change
# between attempts: a retry that recomputes a different amount is refused, loudly, instead of
# charging twice.

# %% [markdown]
# The provider also fails on its own side, and its rules (Stripe's, API v1) say what a retry then
# gets. It saves the first answer for a key once it starts executing, errors included: a 500 comes
# back as the same 500 on every retry. A key still in flight gets 409, and nothing is saved. A
# declined card (402) is a final answer. Here is keyed against each, the fault on the first
# attempt only:

# %%
theirs = [sc.run(sc.Scenario("keyed", fault, "once"))
          for fault in ("provider_down", "provider_500", "provider_409", "declined")]
views.outcome_frame(theirs)[["fault", "charges", "ledger", "attempts", "dlq", "record", "verdict"]]

# %% [markdown]
# Down before executing and 409 are retried a minute later and end exactly once. The saved 500
# moved money, and no retry with that key can learn the charge: keyed marks the record
# `needs_attention` and lets the event reach the failure queue with the reason, instead of trying
# a new key. The decline ends the work with a `declined` record, and nothing is retried or queued.

# %% [markdown]
# ## A lease, and a commit fenced to its owner
#
# The key closes the money window. Two more details make keyed safe against copies running at
# the same time, the hole chapter 05 found in robust. The claim is one conditional put that
# records **who** holds the work (`owner`, a fresh token per invocation) and **until when**
# (`lease_until`, the invocation's deadline). It takes over a record only if there is none, if it
# has expired, or if it is `in_progress` with its lease over. And the commit only lands if the
# record still names the same owner. The commit also books the charge in the same transaction,
# once per charge id (an `entry#<charge id>` item), so even a copy that claims the work again
# after its record expired, and gets the provider's replay, cannot book the same money twice.

# %%
views.show_source(KeyedLedger.claim, KeyedLedger.commit)

# %% [markdown]
# To see the fence work, make a zombie. The first invocation charges, then stalls for 45 s before
# its commit. Its lease ended at 30 s, its deadline. At the end of the stall a copy of the event
# arrives, finds the lease over, takes the work over (a new owner), gets the provider's replay and
# commits. Only then does the first invocation wake up and try to commit:

# %%
zombie = leases.zombie("keyed", pause=45)
views.attempts_frame(zombie)[["t (s)", "delivery", "attempt", "steps", "outcome", "result"]]

# %%
print("what the stalled invocation's handler returned:", leases.last_status(zombie, 1, 1))
print(f"charges {zombie.charges}, ledger {zombie.ledger}, record {zombie.record}: {zombie.verdict}")
fig = views.lease_timeline(zombie)

# %% [markdown]
# The zombie's commit was refused (`LostOwnership`, so its handler returned `superseded`), the
# copy's commit stands, and one charge moved. Lambda would not really have let the first
# invocation run on past its 30 s timeout: the runtime marks it `timeout` and retries it, and that
# retry finds `done`. The stall stands for every way a lease can end while its holder still runs:
# a lease set shorter than the timeout, clocks that disagree, a process frozen and thawed. The
# fence does not care which.
#
# Slide the stall and switch to robust: under 30 s the copy finds a live lease and waits for a
# retry (`WorkInProgress`); over 30 s it takes over. Robust has neither a lease nor a fence, so its
# copy charges at any stall.

# %%
# NBVAL_IGNORE_OUTPUT
views.zombie_explorer()

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore_zombie("keyed", 45)

# %% [markdown]
# ## Why the lease ends at the deadline
#
# A lease shorter than the invocation lets a copy take over from a live invocation: the zombie
# above. A lease longer than the invocation does the opposite harm: when the holder crashes, the
# lease outlives it, and the retries find the work "in progress" with nobody doing it. Keyed ends
# its lease at the deadline (`context.get_remaining_time_in_millis()`), the moment Lambda is sure
# to have stopped the invocation. That is right, but it makes the **function timeout** the lease.
#
# Here is the same crash after the charge, under this workbook's 30 s timeout and under 900 s (the
# 15-minute maximum, a common "just in case" setting). Lambda's own default is 3 s; `template.yaml`
# chooses 30 s.

# %%
short = sc.run(sc.Scenario("keyed", "after_charge", "once", how="crash", timeout=30))
long = sc.run(sc.Scenario("keyed", "after_charge", "once", how="crash", timeout=900))
views.outcome_frame([short, long]).assign(timeout=[30, 900])[
    ["handler", "timeout", "charges", "ledger", "attempts", "dlq", "record", "verdict"]]

# %%
fig = views.lease_timelines(short, long)

# %% [markdown]
# With 30 s, the lease is over long before the retry at t = 60 s, which takes over and finishes.
# With 900 s, the dead invocation's lease covers both retries (t = 60 and 180 s): each finds a live
# lease and fails with `WorkInProgress`, and the event goes to the failure queue with its money
# moved and its books not written. The reason is in the message, read back:

# %%
views.show_text(json.dumps(long.failures[0]["responsePayload"], indent=2), "json")

# %%
views.items_frame(long.items)

# %% [markdown]
# (`lease_until` is in epoch seconds: 1767226500 is t = 900 s on this clock.) Nothing is lost:
# the record is `in_progress` past its lease, which the auditor in chapter 07 flags, and a redrive
# after t = 900 s, within a day, would finish the work with the provider's replay. But a crash now
# costs a human's attention instead of a one-minute retry.
#
# Only a crash waits for the deadline. When keyed *catches* an error (here one before the charge,
# under the same 900 s timeout), it gives its lease back before it raises:

# %%
caught = sc.run(sc.Scenario("keyed", "at_charge", "once", timeout=900))
views.outcome_frame([caught]).assign(timeout=[900])[
    ["handler", "timeout", "charges", "ledger", "attempts", "dlq", "record", "verdict"]]

# %% [markdown]
# The retry at t = 60 s took the work over at once. Still, set the function timeout close to what
# the work really needs: the lease follows it whenever the process dies.

# %% [markdown]
# ## What the table and the queue hold afterwards
#
# This chapter's world, after the crash and the provider experiments: the keyed record is `done`,
# with the owner of the retry that committed it, the lease that retry held, and the receipt; the
# account entry counts one charge, and the `entry#` item says which charge id it booked; the
# fault counter remembers the one crash.

# %%
views.items_frame(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# A keyed function crashes right after the charge, once. Pick `my_timeout` (seconds) so that the
# retries finish the work and nothing reaches the failure queue.

# %%
my_timeout = 900  # your answer here

# %%
trial = sc.run(sc.Scenario("keyed", "after_charge", "once", how="crash", timeout=my_timeout))
if trial.dlq:
    print(f"With a {my_timeout} s timeout the dead invocation's lease runs to t={my_timeout} s, past "
          f"the retries at t=60 and t=180 s: both found the work in progress and the event went to "
          f"the failure queue ({trial.verdict}).")
else:
    print(f"Right: the lease ended at t={my_timeout} s, a retry took the work over and the provider "
          f"replayed the charge ({trial.charges} charge, {trial.verdict}) after {trial.attempts} "
          "attempts.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# Any timeout up to 180 s works: below 60 s the first retry takes over; between 60 and 180 s the
# first retry still finds a live lease and the second one takes over. The good answer is the
# smallest timeout the work reliably fits in (here the default 30 s), because the timeout is also
# how long a crash blocks the work.
# </details>
#
# ## Summary
#
# * No record on your side can close the window between the charge and the commit; passing the
#   same idempotency key to the provider does, because the retry's charge becomes a replay.
# * The claim records an owner and a lease; the commit lands only for the owner, so a zombie whose
#   lease ran out cannot write over its successor.
# * The lease ends at the invocation's deadline, so the function timeout decides how long a crash
#   blocks the retries: keep it close to what the work needs.
#
# **Next:** [07 Time and the auditor](07_time_and_the_auditor.ipynb)
