# %% [markdown]
# # 01 The naive scribe
#
# **After this chapter you can show, on a timeline, how one upload becomes two or three charges,
# and why "I already did this" cannot live in the function's memory.**
#
# The first handler is the one most of us write first: take the event, charge the customer,
# write the charge into the ledger. Nothing in it is wrong line by line. The trouble is the
# platform around it, which repeats events on purpose.

# %% [markdown]
# ## Setup
#
# A fresh local AWS (bucket, ledger table, provider table, failure queue, all on moto) with its
# clock at zero, and the pieces this chapter looks at.

# %%
import json

from idem import views
from idem.local.boundary import FaultPlan
from idem.core.handlers import common, naive
from idem.local import scenarios as sc
from idem.local.runtime import LocalLambda
from idem.local.world import LocalWorld

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, provider {world.provider_table}, "
      f"failure queue {world.queue_name}, clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## What S3 hands the function
#
# An upload into the bucket produces an `ObjectCreated:Put` notification. `world.upload` does a real
# `put_object` on the moto bucket and builds the notification the way S3 writes it (moto's own
# notifications leave out the `versionId` and `sequencer` that later chapters rely on). The
# customer is the object's top-level folder, so this upload bills `alice`.

# %%
order = world.upload("alice/order-0001.csv", b"sku,qty\nledger,1\n")
event = world.event(order)
views.show_text(json.dumps(event, indent=2), "json")

# %% [markdown]
# Everything a handler could use to recognise this piece of work is in there: the bucket, the key,
# the `versionId`, the `eTag` and the `sequencer`. The naive handler uses none of it.

# %% [markdown]
# ## The handler
#
# Here is the naive scribe, and the charge step that every handler in this workbook shares. It is
# the code you would ship: nothing in it knows about tests. The local runtime makes it fail from
# outside, at its calls: the provider's charge and each DynamoDB request.

# %%
views.show_source(naive.handle, common.charge_step)

# %% [markdown]
# ## One failure, two charges
#
# Now run it the way Lambda would. The function is configured with a fault `after_charge`,
# `once`: the first time execution gets past the provider call, it raises (think of a
# downstream timeout while writing the ledger). `LocalLambda` is the local stand-in for the
# Lambda service's asynchronous invoke: S3 `send`s the event, and `run` works through the queue,
# moving the virtual clock to each due time.

# %%
runtime = LocalLambda(world, world.env("naive"), fault=FaultPlan.at_point("after_charge", "once"))
runtime.send(event)
attempts = runtime.run()
views.attempts_frame(attempts)

# %% [markdown]
# Two invocations: the first charged and then failed; Lambda retried it 60 virtual seconds later,
# and the retry charged again and succeeded. Ask the provider, which is the ground truth for money,
# and the ledger, which is the system's own record:

# %%
charges = world.provider().charges()
for charge in charges:
    print(f"{charge.id}  {charge.customer}  {charge.amount / 100:.2f}  for {charge.reference}")
print("ledger entry for alice (charges, cents):", world.ledger().entry("alice"))

# %% [markdown]
# One upload, two charges of 5.00, and a ledger that knows of only one: the first attempt died
# before it could write its entry. Nothing alarms. The logs show one ordinary error followed by a
# success, and the difference turns up weeks later, in a customer's bank statement.
#
# Where did the retry come from? This is the part of the local runtime that does what the Lambda
# service does after a function error: another attempt about a minute later, then about two minutes
# after that, and once `MaximumRetryAttempts` (0 to 2, default 2) is used up, the on-failure
# destination.

# %%
views.show_source(LocalLambda.after_failure)

# %% [markdown]
# ## The same story on a clock
#
# A timeline of the same scenario, this time with the fault on **every** attempt. Each mark is one
# invocation; `$` means money moved during it; `*` marks a cold container.

# %%
poisoned = sc.run(sc.Scenario("naive", "after_charge", "always"))
fig = views.timeline(poisoned)

# %% [markdown]
# Three attempts at t = 0, 60 and 180 s, three charges, and then the event goes to the failure
# queue. The failure queue receives Lambda's invocation record, which carries the original event,
# so nothing is lost, but the customer has already paid three times.

# %%
views.show_text(json.dumps(poisoned.failures[0], indent=2), "json")

# %% [markdown]
# ## The second source of repeats: S3 itself
#
# Even with no failure at all, S3 may deliver an event twice. It is rare, but documented, and the
# handler cannot tell the copies apart unless it looks.

# %%
views.outcome_frame([sc.run(sc.Scenario("naive", "none", "-", delivery))
                     for delivery in sc.DELIVERIES])

# %% [markdown]
# A duplicate delivery, one after the other, charges twice; so does a copy that runs at the same
# time as the first. The function did exactly what it says, every time.

# %% [markdown]
# ## Memory is per container
#
# Lambda reuses a **warm** container for the next invocation, with its module globals intact; a
# **cold** container starts empty. The local runtime does the same: each container loads its own
# copy of `idem.core.entry`. The same failing upload, with containers reused or always fresh:

# %%
trap = [sc.run(sc.Scenario("naive", "after_charge", "always", reuse_containers=warm))
        for warm in (True, False)]
views.outcome_frame(trap).assign(
    containers=["warm" if o.scenario.reuse_containers else "cold" for o in trap],
)[["containers", "charges", "attempts", "dlq", "verdict"]]

# %% [markdown]
# The verdict is the same, but the retries ran in different places. Here are the containers of the
# cold run: each retry started in a new one, with nothing remembered from the last.

# %%
cold = trap[1]
views.attempts_frame(cold)[["t (s)", "attempt", "container", "outcome"]]

# %% [markdown]
# Anything a handler must remember between invocations, "I already charged for this" above all,
# belongs in a store every container can see. The rest of the workbook keeps it in DynamoDB.

# %% [markdown]
# ## Explore
#
# Pick a handler, a fault point, how often it fails and how S3 delivers, and watch the outcome and
# the timeline change. Try `robust` with `after_charge` and `keyed` with the same, or `claim_first`
# with `at_charge, always`; the next chapters explain each of them.

# %%
# NBVAL_IGNORE_OUTPUT
views.explorer()

# %% [markdown]
# The same call with the widget's starting values, so this page reads the same without widgets:

# %%
_ = views.explore("naive", "after_charge", "once", "single")

# %% [markdown]
# ## What the table and the queue hold afterwards
#
# After the first run of this chapter, the ledger table holds only the account's entry. There is
# no record of *which* upload was charged, or whether it
# finished: nothing to check a retry against.

# %%
views.items_frame(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# You cannot change the handler yet, but you can change the platform. Set `my_retries`
# (Lambda's `MaximumRetryAttempts`, 0 to 2) so that `naive` under `after_charge, once` charges the
# customer exactly once. Then read what the check says the price was.

# %%
my_retries = 2  # your answer here

# %%
attempt = sc.run(sc.Scenario("naive", "after_charge", "once", retries=my_retries))
if attempt.charges != 1:
    print(f"With {my_retries} retries the customer pays {attempt.charges} times: each retry runs the "
          "charge again. Fewer retries means fewer second chances to charge.")
else:
    print(f"One charge. The price: the event is in the failure queue (dlq={attempt.dlq}) and the ledger "
          f"holds {attempt.ledger} entries, so the books disagree with the provider "
          f"({attempt.verdict}). Turning retries off trades double charges for unfinished work.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# `my_retries = 0`. The first attempt charges and fails, and nothing retries it: one charge, but the
# ledger never recorded it and the event sits in the failure queue. Retries are not the bug; they
# are how the platform makes sure work is not lost. The handler has to be safe to repeat.
# </details>
#
# ## Summary
#
# * A function error after the charge makes Lambda run the charge again, a minute later, and again.
# * S3 can also deliver the same event twice, with no error anywhere.
# * State that must survive between invocations belongs in a shared store, not in a container's memory.
#
# **Next:** [02 The atomic claim](02_the_atomic_claim.ipynb)
