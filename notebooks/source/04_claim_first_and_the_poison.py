# %% [markdown]
# # 04 Claim-first and the poison
#
# Why does "claim, then work" lose money silently?
#
# **After this chapter you can explain how claim-first fails without a trace, and write an alarm that notices.**
#
# With an atomic claim (chapter 02) on a sound key (chapter 03), the obvious handler claims the
# key and then charges. Duplicates stand down, and the double charges of chapter 01 are gone.
# But the claim records only "someone saw this event". When the work behind it fails, every
# retry reads "seen" and stands down too. The failure disappears with it.

# %% [markdown]
# ## Setup
#
# The claim-first handler, the scenario runner, and a fresh local AWS with its clock at zero.

# %%
from idem import views
from idem.core.handlers import claim_first
from idem.core.ledger import Ledger
from idem.lessons.scribes import alarms
from idem.explore import scenarios as sc
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, failure queue {world.queue_name}, "
      f"clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## The handler
#
# Three steps. One conditional put of the key (`Ledger.claim_once`, the winner of chapter 02's
# race). Then the charge step every handler shares. Then the ledger entry.

# %%
views.show_source(claim_first.handle, Ledger.claim_once, Ledger.put_if_absent)

# %% [markdown]
# ## One fault, every handler
#
# A fair comparison gives every handler the same failure. The failures happen at the calls every
# handler makes, never inside the handlers. There are three fault points:
#
# * `at_charge` fails the provider call before it is sent, so no money moves.
# * `after_charge` loses the provider's answer after it charged.
# * `after_commit` fails the invocation after its last write.
#
# A fault fires `once` (the first attempt to get there) or `always` (every attempt). An event
# that fails on every attempt is a **poison event**: retrying it cannot help.
#
# Here are all fault points, once and always, for one upload and four handlers. Each of the 28
# runs gets a fresh world.

# %%
four_handlers = ("naive", "claim_first", "robust", "keyed")
uniform = [sc.run(s) for s in sc.select(sc.all_scenarios(four_handlers), delivery="single")]
views.matrix_table(uniform)

# %% [markdown]
# Read the `claim_first` column. It never charges twice. But whenever the charge step fails, it
# ends in one of two quiet verdicts:
#
# * `silent_loss`: no money moved, and nothing says so.
# * `silent_mismatch`: money moved, your ledger does not know, and nothing says so.
#
# Where the charge step fails, the poison rows (`always`) are no louder than `once`. `robust`
# meets the same poison at the charge and lets the event reach the failure queue
# (`failed_visibly`).
#
# One `claim_first` row is louder: `after_commit, always`. That fault fires after the handler has
# returned, on every attempt. So the retries fail too, although they only found the claim and
# stood down, and the event reaches the failure queue. Its work was done: one charge, and a
# ledger that agrees. By chapter 00's first matching rule, that is `exactly_once`.

# %% [markdown]
# ## The silent mismatch, up close
#
# Money moved, then the function failed before its ledger entry: `after_charge`, `once`. Run it
# in this chapter's world, then draw what the run recorded. (How the local runtime queues and
# retries is in [the appendix](13_appendix_the_local_aws.ipynb#local-runtime).)

# %%
mismatch = sc.Scenario("claim_first", "after_charge", "once")
runtime = LocalLambda(world, world.env("claim_first"), fault=sc.fault_of(mismatch))
runtime.send(world.event(world.upload(sc.ORDER_KEY)))
runtime.run()
close_up = sc.read_outcome(world, runtime, mismatch, has_done_state=False)
fig = views.sequence_chart(close_up)

# %% [markdown]
# Follow the arrows down. Attempt 1 claims the key and charges. The provider's answer is lost,
# so the attempt fails. Lambda retries a minute later. Attempt 2 finds the claim and returns
# `duplicate`, which Lambda counts as a success. The boxes at the bottom hold the result: one
# charge at the provider, none in your ledger, and an empty failure queue. Ask each of them
# directly:

# %%
print("provider charges:", [(c.id, c.customer, c.amount) for c in world.provider().charges()])
print("ledger entry for alice (charges, cents):", world.ledger().entry("alice"))
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# The customer paid 5.00, and the ledger says nothing was charged. The logs show one error and
# then a success. That is the very pattern of a transient glitch that healed itself:

# %%
for attempt in close_up.trace:
    for line in attempt.logs:
        print(views.fold(f"attempt {attempt.attempt}: {line}"))
    print(views.fold(f"attempt {attempt.attempt}: returned {attempt.result or attempt.error}"))

# %% [markdown]
# Notice that no line says money moved without a ledger entry. Nobody will be paged.

# %% [markdown]
# ## The silent loss
#
# Now the provider call itself fails: `at_charge`. It may fail once (a hiccup) or always (a dead
# provider). Either way the retry stands down, no money moves, and no event reaches the failure
# queue. Here is the poison for `claim_first`, with `robust` facing the same fault below it:

# %%
poison = [sc.run(sc.Scenario(h, "at_charge", "always")) for h in ("claim_first", "robust")]
fig = views.timelines(poison)

# %% [markdown]
# `claim_first` stops after two attempts, the second a green "success". `robust` fails all three
# of Lambda's attempts. Then Lambda hands the event to the failure queue, where a person can see
# it. Once the cause is fixed, the person sends the event through the function again: a
# **redrive**. Here is the part of the message in `robust`'s failure queue that says why it is
# there (its request id left out); `claim_first` has none.

# %%
print("claim_first failure queue:", poison[0].failures)
views.show_json(poison[1].failures[0]["requestContext"], hide=("requestId",))

# %% [markdown]
# A double charge is found in the end: the customer sees it, often weeks later, and you refund.
# A silent loss is an order never billed. A silent mismatch is a ledger that disagrees with the
# provider, with logs that say all went well. Only a **reconciliation** finds them: a job that
# compares your books with the provider's and reports every difference. Chapter 07 writes one.

# %% [markdown]
# ## What the table holds, for each handler
#
# Here is the ledger table after the same fault (`after_charge`, `once`) for three handlers, read
# back from DynamoDB at the end of each run. Each row is one item: its key, its status and what
# it holds. (The keyed handler's table waits for chapter 06.)

# %%
after_charge = [o for o in uniform
                if (o.scenario.fault, o.scenario.times) == ("after_charge", "once")
                and o.scenario.handler != "keyed"]
views.items_by_handler(after_charge)

# %% [markdown]
# * `naive` leaves only the account's entry. It counts fewer charges than the provider made, and
#   nothing says which upload was charged twice.
# * `claim_first` counts nothing: its `account#alice` item holds only the account's customer
#   mapping (chapter 03), and beside it is a claim marked `claimed`. The claim names the upload.
#   It does not say whether its work finished.
# * `robust` leaves a record marked `done` and an entry. The entry also counts fewer charges than
#   the provider made (chapter 06 explains why).
#
# The failure queue stays empty in all three. Whether `claim_first`'s table still holds a trace of
# the lost work is the question this chapter's exercise asks.

# %% [markdown]
# ## Explore
#
# Pick a fault point and how often it fires. `naive`, `claim_first` and `robust` all meet the same
# fault (`keyed` waits for chapter 06).

# %% tags=["nbval-ignore-output"]
views.fault_explorer("at_charge", "once")

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore_fault("at_charge", "once")

# %% [markdown]
# Notice that `at_charge` once is harmless for `robust`, and a silent loss for `claim_first`.

# %% [markdown]
# ## What this chapter's own table holds
#
# The world of the up-close run holds the claim, and no ledger entry for the money that moved.

# %%
views.compact_items(world.ledger().items())

# %% [markdown]
# ## Try it
#
# You run `claim_first` in production and want an alarm. Write `my_alarm(outcome)`. It returns
# `True` when something needs a look. Use only what you could observe:
#
# * `outcome.charges`: the provider's count of charges;
# * `outcome.ledger`: your ledger's count;
# * `outcome.dlq`: the messages in the failure queue;
# * `outcome.items`: the ledger table's items, as plain dicts. A claim looks like
#   `{"pk": "charge#...", "status": "claimed", ...}`; the account entry,
#   `{"pk": "account#alice", "charges": 1, "cents": 500}`, has no `status`.
#
# It should fire on every run that is not `exactly_once`, and stay quiet on the others. The check
# runs it over `claim_first`'s seven rows of the table above. Then it runs two cases this chapter
# did not show: two uploads of alice's, both charged; and two uploads, the first one's charge call
# failing once. Predict first: will a rule that is right on the seven rows be right on these two?

# %%
def my_alarm(outcome):
    return None  # your answer here: True when something needs a look


# %%
claim_first_rows = [o for o in uniform if o.scenario.handler == "claim_first"]
print(alarms.explain_alarm(my_alarm, claim_first_rows + alarms.unseen_runs()))

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_alarm(outcome):
#     claims = sum(item.get("status") == "claimed" for item in outcome.items)
#     return outcome.charges != outcome.ledger or outcome.ledger < claims
# ```
#
# A silent mismatch shows as the provider's count differing from yours. A silent loss shows as a
# claim with no ledger entry behind it. Neither reaches the failure queue. A rule about one
# upload, such as `outcome.ledger == 0`, is right on the seven rows. It stays quiet when one of
# two uploads is lost, because the other one's entry hides it: count claims against entries. And the failure queue
# can hold an event whose work was done (`after_commit`, `always`), so it is no alarm for
# claim-first either way. In production this check is a reconciliation job over all claims and
# charges (chapter 07).
# </details>
#
# ## Summary
#
# * Claim-first loses money silently because its claim says only "seen": a retry finds it and
#   reports success, even when the work behind it failed.
# * The result is a silent mismatch (money moved, no ledger entry) or a silent loss (no money
#   at all), and the failure queue stays empty, even for a poison event.
# * Only a reconciliation of your ledger against the provider finds them. The record needs a
#   state that says how far the work got (chapter 05).
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [05 The robust scribe](05_the_robust_scribe.ipynb)
