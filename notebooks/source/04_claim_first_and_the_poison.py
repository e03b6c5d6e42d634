# %% [markdown]
# # 04 Claim-first and the poison
#
# **After this chapter you can explain why "claim the key, then do the work" never charges twice
# yet loses money or work without a trace, and find its footprints in the DynamoDB table.**
#
# With an atomic claim (chapter 02) on a sound key (chapter 03), the obvious handler writes the
# claim and then charges. Duplicates stand down, and the double charges of chapter 01 are gone.
# What the claim records, though, is only "someone saw this event". When the work behind it
# fails, every retry reads "seen" and stands down too, and the failure disappears with it.

# %% [markdown]
# ## Setup
#
# The claim-first handler, the scenario runner, the local Lambda runtime and a fresh local AWS
# with its clock at zero.

# %%
import json

from idem import views
from idem.local.boundary import FaultPlan
from idem.core.handlers import claim_first
from idem.core.ledger import Ledger
from idem.local import scenarios as sc
from idem.local.runtime import LocalLambda
from idem.local.world import LocalWorld
from idem.local import alarms

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, failure queue {world.queue_name}, "
      f"clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## The handler
#
# One conditional put of the key (`Ledger.claim_once`, the winner of chapter 02's race), then
# the charge step every handler shares, then the ledger entry.

# %%
views.show_source(claim_first.handle, Ledger.claim_once, Ledger.put_if_absent)

# %% [markdown]
# ## One fault, every handler
#
# A fair comparison needs the same failure for everyone. The failures happen at the calls every
# handler makes, never inside the handlers: `at_charge` fails the provider call before it is sent
# (no money moves), `after_charge` loses the provider's answer after it charged, and
# `after_commit` fails the invocation after its last write. The runtime counts arrivals at each
# of those places per upload, so `once` means the first attempt to get there and `always` means
# every attempt: the poison.

# %% [markdown]
# Every fault point, once and always, one upload, single delivery, four handlers: 28 scenarios,
# each in a fresh world, run now.

# %%
uniform = [sc.run(s) for s in sc.select(sc.all_scenarios(("naive", "claim_first", "robust", "keyed")),
                                         delivery="single")]
views.matrix_table(uniform)

# %% [markdown]
# Read the `claim_first` column. It never charges twice. But whenever the charge step fails, it
# ends in one of the two quiet verdicts: `silent_loss` (no money moved, and nothing says so) or
# `silent_mismatch` (money moved, the books do not know, and nothing says so). The poison rows
# (`always`) are no louder than `once`: it stops after two attempts. `robust`, meeting the same
# poison at the charge, lets the event reach the failure queue (`failed_visibly`).

# %% [markdown]
# ## The silent mismatch, up close
#
# Money moved, then the function failed before its ledger entry: `after_charge`, `once`.

# %%
runtime = LocalLambda(world, world.env("claim_first"), fault=FaultPlan.at_point("after_charge", "once"))
runtime.send(world.event(world.upload(sc.ORDER_KEY)))
attempts = runtime.run()
views.attempts_frame(attempts)

# %% [markdown]
# The first attempt claimed, charged, and failed. Lambda retried it a minute later, as it should;
# the retry found the claim and returned `duplicate`, a success. Now ask the provider, the ledger
# and the failure queue:

# %%
print("provider charges:", [(c.id, c.customer, c.amount) for c in world.provider().charges()])
print("ledger entry for alice (charges, cents):", world.ledger().entry("alice"))
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# The customer paid 5.00, the ledger says nothing was charged, and the failure queue is empty.
# What the logs show is one error followed by a success, the very pattern of a transient glitch
# that healed itself:

# %%
for attempt in attempts:
    for line in attempt.logs:
        print(f"attempt {attempt.attempt}: {line}")
    print(f"attempt {attempt.attempt}: returned {attempt.result or attempt.error}")

# %% [markdown]
# ## The silent loss
#
# Now the provider call itself fails: `at_charge`. Once (a hiccup) or always (a dead provider),
# the outcome is the same: the retry is deduplicated away, no money moves, and no event reaches
# the failure queue. Here is the poison for `claim_first`, with `robust` facing the same fault
# below it:

# %%
poison = [sc.run(sc.Scenario(h, "at_charge", "always")) for h in ("claim_first", "robust")]
fig = views.timelines(poison)

# %% [markdown]
# `claim_first` stops after two attempts, the second a green "success". `robust` keeps failing
# through Lambda's three attempts, and then Lambda hands the event to the failure queue, where a
# human or a redrive can pick it up. This is the message in `robust`'s failure queue; `claim_first`
# has none.

# %%
print("claim_first failure queue:", poison[0].failures)
views.show_text(json.dumps(poison[1].failures[0]["requestContext"], indent=2), "json")

# %% [markdown]
# A double charge is loud: the customer complains and you refund. A silent loss is an order never
# billed, and a silent mismatch a ledger that does not reconcile with the provider at month end,
# with logs that say everything went fine. Both are found late, if at all.

# %% [markdown]
# ## What the table holds, for each handler
#
# The ledger table after the same fault, `after_charge`, `once`, for each handler, read back from
# DynamoDB at the end of each run.

# %%
after_charge = [o for o in uniform if (o.scenario.fault, o.scenario.times) == ("after_charge", "once")]
views.items_frame([{"handler": o.scenario.handler, **item} for o in after_charge for item in o.items])

# %% [markdown]
# * `naive` leaves only the account's entry: `charges` 1, while the provider charged twice. Nothing
#   says which upload that was.
# * `claim_first` leaves no `account#alice` item at all, only a claim marked `claimed`. The claim
#   names the upload, but says nothing about whether its work finished.
# * `robust` and `keyed` leave a record marked `done` and an entry. `robust`'s entry says 1 while
#   the provider charged twice (chapter 06); `keyed`'s agrees with the provider.
#
# In `claim_first`'s table, the only footprint of the lost work is a claim with no matching
# ledger entry. An auditor that compares the two can find it (chapter 07); nothing else will.

# %% [markdown]
# ## Explore
#
# Pick a fault point and how often it fires; every handler meets the same fault.

# %%
# NBVAL_IGNORE_OUTPUT
views.fault_explorer("at_charge", "once")

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore_fault("at_charge", "once")

# %% [markdown]
# ## What this chapter's own table and queue hold
#
# The world of the up-close run: the claim, the fault counter, and no ledger entry for the money
# that moved. The failure queue is empty.

# %%
views.items_frame(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# You run `claim_first` in production and want an alarm. Write `my_alarm(outcome)`, returning
# `True` when something needs a look, from what you could observe: `outcome.charges` (the
# provider's count), `outcome.ledger` (your ledger's), `outcome.dlq` (failure-queue messages), and
# `outcome.items` (the ledger table's items). The check runs it over `claim_first`'s seven rows
# above: it should fire on every row that is not `exactly_once`, and stay quiet on the others.

# %%
def my_alarm(outcome):  # your answer here
    return outcome.dlq > 0


# %%
claim_first_rows = [o for o in uniform if o.scenario.handler == "claim_first"]
problems = alarms.check_alarm(my_alarm, claim_first_rows)
for problem in problems:
    print("Your alarm", problem)
if problems:
    print("A failure queue alarm is blind to claim_first: its retries report success, so no event "
          "ever reaches the queue. Compare what the records say with what the money says.")
else:
    print(f"Right: it fires on all {sum(o.verdict != 'exactly_once' for o in claim_first_rows)} "
          "quiet failures and stays silent on the rest.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_alarm(outcome):
#     claims = sum(item.get("status") == "claimed" for item in outcome.items)
#     return outcome.dlq > 0 or outcome.charges != outcome.ledger or outcome.ledger < claims
# ```
#
# A silent mismatch shows as the provider's count differing from the ledger's; a silent loss as a
# claim with no ledger entry behind it. Neither reaches the failure queue. In production this check
# is a scheduled job over all claims and charges, the auditor of chapter 07.
# </details>
#
# ## Summary
#
# * Claim-first stops duplicates: it never charged twice here, whatever the fault.
# * When the work after the claim fails, the retry finds the claim and reports success: money
#   moved with no ledger entry (silent mismatch) or no money at all (silent loss), and the failure
#   queue stays empty.
# * Its table holds a `claimed` item per upload, which names the work but not whether it finished;
#   the record needs a state that says how far the work got.
#
# **Next:** [05 The robust scribe](05_the_robust_scribe.ipynb)
