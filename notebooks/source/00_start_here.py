# %% [markdown]
# # The Ledger That Charged Twice
#
# **After this chapter you know what the workbook covers, how to drive it, and the one table
# that the other chapters explain, row by row.**
#
# A file lands in an S3 bucket. S3 tells a Lambda function. The function charges the customer
# who uploaded it and writes the charge into a DynamoDB ledger. One upload, one charge: that is
# the whole job, and it is surprisingly hard to get right, because the platform around the
# function repeats itself on purpose:
#
# * **S3 event notifications are delivered at least once.** Now and then the same event arrives twice.
# * **Lambda retries a failed asynchronous invocation**, by default twice more: about a minute after
#   the failure, then about two minutes after that. S3 invokes functions asynchronously, so a handler
#   that charges and *then* fails is run again, and charges again.
#
# This workbook builds that pipeline on your machine, with the real boto3 API in front of
# [moto](https://docs.getmoto.org/) (an in-process AWS), a local Lambda runtime that retries the way
# the service does, and a payment provider stand-in that counts every time money moves. You will watch
# five ways of writing the handler charge once, twice, three times or not at all, and learn which
# guarantees each one really gives. The last chapter deploys the same code to your own AWS account.

# %% [markdown]
# ## How to use it
#
# * Run the cells from the top, in order (**Shift+Enter**, or *Run > Run All Cells*). Every chapter
#   starts from a fresh, empty local AWS, so chapters can be run in any order.
# * Nothing here needs an AWS account, a network or money. Time is virtual: "a minute later" is a
#   number on a clock the runtime owns, so nothing sleeps and every run gives the same result.
# * All the code lives in the `idem` package next to these notebooks. The chapters *show* it
#   (straight from the source files) and *run* it; they do not define logic of their own. Open
#   `idem/core/handlers/` in JupyterLab's file browser whenever you want to read a whole module.
# * Widgets let you change the handler, where the failure lands and how S3 delivers. Under each
#   widget sits a plain cell that makes the same call with the widget's starting values, so the
#   chapter reads the same even where widgets cannot render.
# * Each chapter ends with a short exercise and a cell that checks your answer.
#
# From a terminal in the project folder, `make lab` opens this workbook and `make test` runs
# every test, including every chapter, exactly as stored.

# %% [markdown]
# ## The map
#
# | chapter | what it answers |
# | --- | --- |
# | [01 The naive scribe](01_the_naive_scribe.ipynb) | Why does one upload become two charges? |
# | [02 The atomic claim](02_the_atomic_claim.ipynb) | Why must the claim be one conditional write, not a read then a write? |
# | [03 Choosing a key](03_choosing_a_key.ipynb) | What should the idempotency key be made of, and what goes wrong otherwise? |
# | [04 Claim-first and the poison](04_claim_first_and_the_poison.ipynb) | Why does "claim, then work" lose money silently? |
# | [05 The robust scribe](05_the_robust_scribe.ipynb) | How does an `in_progress` -> `done` record fix that, and where does it leak? |
# | [06 Charge, then die](06_charge_then_die.ipynb) | What closes the gap between the charge and the commit? |
# | [07 Time and the auditor](07_time_and_the_auditor.ipynb) | How long must a record live, and how do you find what slipped through? |
# | [08 Powertools side by side](08_powertools_side_by_side.ipynb) | Where does Powertools for AWS Lambda protect you, and where not? What does each pattern cost? |
# | [09 Deploy to AWS](09_deploy_to_aws.ipynb) | The same code on your own account: watch it charge twice, then once. |
# | [10 Check your own handler](10_check_your_own_handler.ipynb) | Does your own handler charge once, whatever S3 and Lambda do? |

# %% [markdown]
# ## Setup
#
# Every chapter starts with one cell like this: the views (tables, pictures, widgets) and the
# scenario runner.

# %%
from idem import views
from idem.local import scenarios as sc

# %% [markdown]
# ## The whole story in one table
#
# Each cell below is one *scenario*, run from scratch: a fresh bucket, ledger, provider and
# failure queue; one upload; the local Lambda runtime delivering the event and retrying failures
# until it gives up. A cell reads **charges** (how many times the provider moved money) and a
# **verdict**. The handlers:
#
# * `naive` charges and writes the ledger entry, with no guard at all;
# * `claim_first` records the event's key with a conditional write, then does the work;
# * `robust` keeps a record that moves from `in_progress` to `done`, as the article this workbook
#   comes from writes it;
# * `keyed` is the complete pattern: one conditional write claims the work with a lease, the same
#   key goes to the payment provider, and the commit only lands for the claim's owner.
#
# The rows say where a failure is injected (`at_charge`: the provider call fails;
# `after_charge`: money moved, then the function fails before its own records; `after_commit`:
# everything is written, then it fails), whether it fails `once` or `always`, and how S3
# delivers the event. This cell runs all 32 scenarios now, on your machine:

# %%
headline = [sc.run(s) for s in sc.headline_scenarios()]
views.matrix_table(headline)

# %% [markdown]
# How to read a verdict (the first rule that matches):
#
# | verdict | charges | what it means |
# | --- | --- | --- |
# | `double_charge` | 2 or more | The customer paid more than once. Loud, and cheap to notice. |
# | `exactly_once` | 1 | Money moved once, the ledger agrees, and the record says `done`. |
# | `needs_attention` | 1 | Money moved once, but the work did not finish; the event sits in the failure queue or its record is flagged. A human will look. |
# | `silent_mismatch` | 1 | Money moved once, the books disagree, and nothing alerts anyone. |
# | `failed_visibly` | 0 | No money moved and the event is in the failure queue. |
# | `silent_loss` | 0 | No money moved, and nothing says so. |
#
# Notice three things, each of which gets a chapter: `naive` charges again whenever the function
# fails after the charge (chapter 01); `claim_first` never double-charges but, under a failing
# charge, quietly loses or mismatches (chapter 04); `robust` survives the poison but charges twice
# when the function dies between the charge and the commit, and when two copies of the event run
# at once (chapters 05 and 06). Only `keyed` has no red cell, and chapter 06 shows why that needs
# the payment provider's help.

# %% [markdown]
# ## Where the pieces sit
#
# ```mermaid
# flowchart LR
#     U([upload]) --> S3[(S3 bucket<br/>versioned)]
#     S3 -- "event, at least once" --> Q[[Lambda async queue]]
#     Q -- "invoke; on error retry<br/>+1 min, +2 min" --> F[function<br/>idem.core.entry]
#     F -- "claim / commit" --> L[(DynamoDB ledger<br/>records + entries)]
#     F -- "charge (idempotency key)" --> P[(payment provider)]
#     Q -- "retries exhausted" --> D[[SQS failure queue]]
# ```
#
# Locally, S3, DynamoDB and SQS are moto; the async queue is `idem.local.runtime.LocalLambda`;
# the provider is `idem.core.provider.Provider`, a stand-in with its own table. Chapter 09 replaces all of
# them with the real services.

# %% [markdown]
# ## Try it
#
# Before chapter 01: the `robust` handler is hit by `after_charge` failures on **every** attempt
# (`always`). Lambda makes the first attempt and two retries. How many times does the provider
# charge the customer? Put your guess in `my_guess` and run the check.

# %%
my_guess = 1  # your answer here

# %%
truth = sc.run(sc.Scenario("robust", "after_charge", "always"))
if my_guess == truth.charges:
    print(f"Right: {truth.charges} charges. Every attempt charges before it fails, and robust's "
          "record is still in_progress, so each retry charges again.")
else:
    print(f"Not {my_guess}: it was {truth.charges}. Each of the {truth.attempts} attempts reaches the "
          "provider before failing, and an in_progress record tells the retry to try the work again.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# Three. `robust` reads its record on each retry, finds `in_progress` (it never got to `done`) and
# charges again: three attempts, three charges, and the event ends in the failure queue.
# </details>
#
# ## Summary
#
# * S3-triggered Lambda is at-least-once twice over: S3 may deliver twice, and Lambda retries failures.
# * A handler that moves money and then fails will move it again unless it is written not to.
# * Every number in this workbook is computed by running the real code on a local AWS.
#
# **Next:** [01 The naive scribe](01_the_naive_scribe.ipynb)
