# %% [markdown]
# # 00 Start here: the ledger that charged twice
#
# Why is "charge once for each order" hard to get right on S3 and Lambda?
#
# **After this chapter you can say what idempotent means, read the workbook's one table, and run any chapter.**
#
# A file lands in an S3 bucket: an order. S3 tells a Lambda function. The function charges the
# customer for the order, and writes the charge into a ledger table in DynamoDB. One order, one
# charge: that is the whole job. It is hard to get right because the platform around the function
# repeats itself on purpose. (Until chapter 03, each upload is a new order; chapter 03 shows when
# it is not.)

# %% [markdown]
# This workbook builds that pipeline on your machine. The AWS services are
# [**moto**](https://docs.getmoto.org/), an AWS that runs inside Python, behind the real boto3 API.
# A local Lambda runtime retries the way the service does. A stand-in payment provider counts
# every time money moves. The last chapters deploy the same code to your own AWS account.
#
# The story comes from an article, *The Ledger That Charged Twice: S3 Lambda Idempotency*, in which
# one order was charged twice and no alarm went off. The chapters call it "the article"; they
# keep its facts and figures, and check them.

# %% [markdown]
# ## How to use it
#
# * Run the cells from the top, in order (*Shift+Enter*, or *Run > Run All Cells*).
# * Every chapter starts from a fresh, empty local AWS, so you can run the chapters in any order.
# * Nothing here needs an AWS account, a network or money.
# * Time is virtual: "a minute later" is a number on a **virtual clock**, a clock the runtime
#   owns and moves forward itself. Nothing sleeps, and every run gives the same result.

# %% [markdown]
# More about how the chapters work:
#
# * All the code lives in the `idem` package next to these notebooks. The chapters *show* it,
#   straight from the source files, and *run* it.
# * Widgets let you change the handler, where it fails and how S3 delivers. Under each widget
#   sits a plain cell that makes the same call, so the page reads the same without widgets.
# * Each chapter ends with a short exercise and a cell that checks your answer.
#
# From a terminal in the project folder, `make lab` opens this workbook. `make test` runs every
# test, including every chapter as stored.

# %% [markdown]
# ## Idempotent: setting a value, not adding to it
#
# An operation is **idempotent** when doing it twice leaves the world as doing it once does.
#
# * "Set Alice's balance to 10" is idempotent. Run it twice, and her balance is still 10.
# * "Add 10 to Alice's balance" is not. Run it twice, and she has 20 more.
#
# A charge is an addition: every run moves money again. So a function that charges is not
# idempotent unless we make it so. The rest of the workbook is about how.

# %% [markdown]
# ## Three promises about delivery
#
# A system that hands events to your code makes one of these promises:
#
# * **At-most-once delivery**: no event arrives twice, but some may never arrive.
# * **At-least-once delivery**: every event arrives, but some may arrive more than once.
# * **Effectively-once** processing: events may arrive more than once, but their effect happens
#   once. You get it from at-least-once delivery plus an idempotent handler.

# %% [markdown]
# S3 and Lambda give at-least-once delivery, twice over:
#
# * S3 sends an event notification for each upload, "at least once": now and then it sends the
#   same one twice ([S3 event notifications](https://docs.aws.amazon.com/AmazonS3/latest/userguide/NotificationHowTo.html)).
# * S3 invokes the function by an **asynchronous invocation**: it hands the event to Lambda and
#   does not wait for the answer. When such an invocation fails, Lambda runs it again: about a
#   minute later, then about two minutes after that
#   ([Lambda's retries](https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)).

# %% [markdown]
# Two more ways the platform repeats or gives up:
#
# * When those retries are used up, Lambda sends a record of the event, the event inside, to a
#   **failure queue**: an SQS queue set as the function's **on-failure destination**, where
#   Lambda sends what it gave up on. A person can look at it there.
# * Lambda's own queue of asynchronous events can hand the function the same event twice with no
#   error at all, and when the function cannot keep up it can drop events
#   ([AWS](https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)).
#   What chapters 09 and 10 deploy raises an alarm on those drops.
#
# So a function that charges and *then* fails is run again, and charges again. Effectively-once
# is up to the handler.

# %% [markdown]
# ## Where the pieces sit
#
# ```mermaid
# flowchart LR
#     U([upload]) --> S3[(S3 bucket)]
#     S3 -- "event, at least once" --> Q[[Lambda async queue]]
#     Q -- "invoke; on error retry<br/>+1 min, +2 min" --> F[function<br/>idem.core.entry]
#     F -- "ledger writes" --> L[(DynamoDB<br/>ledger table)]
#     F -- "charge" --> P[(payment provider)]
#     Q -- "retries used up" --> D[[SQS failure queue]]
# ```
#
# Locally, S3, DynamoDB and SQS are moto. The async queue is the workbook's local Lambda runtime.
# The payment provider is a stand-in with its own table. Chapter 09 deploys the same code to the
# real services, and says what only a run on a real account can show.

# %% [markdown]
# ## The map
#
# | chapter | what it answers |
# | --- | --- |
# | [01](01_the_naive_scribe.ipynb) | Why does one upload become two charges? |
# | [02](02_the_atomic_claim.ipynb) | How do two copies of one event agree which of them does the work? |
# | [03](03_choosing_a_key.ipynb) | What should name one order, so that every copy of its event gets that name, and no other order does? |
# | [04](04_claim_first_and_the_poison.ipynb) | Why does "mark it taken, then do the work" lose money without a sound? |
# | [05](05_the_robust_scribe.ipynb) | How does a record that says "started" and then "done" help, and where does it leak? |
# | [06](06_charge_then_die.ipynb) | What closes the gap between the charge and the last write? |
# | [07](07_time_and_the_auditor.ipynb) | How long must a record live, and how do you find what slipped through? |

# %% [markdown]
# The rest compares AWS's library, ships the pattern, checks your own handler, and opens the
# local AWS:
#
# | chapter | what it answers |
# | --- | --- |
# | [08](08_powertools_side_by_side.ipynb) | Where does **Powertools** for AWS Lambda (AWS's library for handlers) protect you, and what does each pattern cost? |
# | [09](09_deploy_to_aws.ipynb) | How do you ship the handler with `template.yaml`, and what does a rehearsal on moto prove? |
# | [10](10_run_in_production.ipynb) | What does the production profile add so that no order is lost without someone being told? |
# | [11](11_check_your_own_handler.ipynb) | Does your own handler charge once, whatever S3 and Lambda do? |
# | [12](12_what_to_ship.ipynb) | What do you take away to production? |
# | [13](13_appendix_the_local_aws.ipynb) | How does the local AWS stand in for the real one? |

# %% [markdown]
# ## Setup
#
# Every chapter starts with one cell like this. It imports the views (tables, pictures, widgets)
# and the scenario runner.

# %%
from idem import views
from idem.explore import scenarios as sc
from idem.lessons.scribes.retries import check_charges_guess

# %% [markdown]
# ## How to read the one table
#
# The table below runs four handlers through the same trouble. In plain words:
#
# * `naive` charges the customer, then adds the charge to the ledger. It keeps no record of which
#   uploads it has handled.
# * `claim_first` first writes a record that says "this upload is taken", then charges. A copy
#   that finds the record already there does nothing.
# * `robust` writes a record that says "started", charges, then marks it "done". A copy that
#   finds "done" does nothing; one that finds "started" tries the work again.
# * `keyed` is the complete pattern of this workbook. It also gives the payment provider a name
#   for the order, so that the provider itself refuses to charge for it twice.

# %% [markdown]
# Each row is one kind of trouble. A **fault point** is where the run makes the function fail:
#
# * `at_charge`: just before the call to the provider, so no money moves;
# * `after_charge`: money moved, then the function fails before it records the charge or marks its
#   work done;
# * `after_commit`: everything is written, then the function fails;
# * `none`: no failure at all.
#
# `once` fails the first time the run reaches the point; `always` fails every time. A
# **duplicate delivery** is S3 sending the event twice, a few seconds apart. A **concurrent
# delivery** is a second copy that starts while the first is still running.

# %% [markdown]
# Each cell shows the number of *charges* (how many times the provider moved money), then a
# **verdict**: one word for what the run did to the customer and the books. Read a verdict with
# the first rule that matches.

# %% [markdown]
# When money moved:
#
# | verdict | charges | what it means |
# | --- | --- | --- |
# | **`double_charge`** | 2 or more | The customer paid more than once. Often nothing alerts, and the customer finds it weeks later. Even when the event reaches the failure queue, nothing there says money moved twice. |
# | **`exactly_once`** | 1 | Money moved once and the ledger agrees. For a handler whose record has a **`done`** state (work finished and recorded), the record also says `done`. The work is finished, even if the event also reached the failure queue. |
# | **`needs_attention`** | 1 | Money moved once, but the work did not finish. The event is in the failure queue, or the record says so. A person will look. |
# | **`silent_mismatch`** | 1 | Money moved once, the ledger disagrees, and nothing alerts anyone. |

# %% [markdown]
# When no money moved:
#
# | verdict | charges | what it means |
# | --- | --- | --- |
# | **`failed_visibly`** | 0 | No money moved, and the event is in the failure queue. |
# | **`silent_loss`** | 0 | No money moved, and nothing says so. |
# | **`declined`** | 0 | The card's bank said no to the charge: a **decline**. The record says so, and nothing is retried. Chapter 06 meets it. |

# %% [markdown]
# ## The whole story in one table
#
# Each cell is one scenario, run from scratch: a fresh bucket, ledger, provider and failure queue,
# and one upload. The local runtime delivers the event and retries failures until it gives up.
# This cell runs every scenario now, on your machine.

# %%
headline = [sc.run(s) for s in sc.headline_scenarios()]
views.matrix_table(headline)

# %% [markdown]
# Notice four things. Each one gets a chapter.
#
# * `naive` charges again whenever the function fails after the charge (chapter 01).
# * `claim_first` never charges twice. But when the function fails at the charge, or between the
#   charge and the ledger write, it loses the order or lets the books disagree. Nobody hears of it
#   (chapter 04).
# * `robust` charges twice when the function dies between the charge and its last write. It also
#   charges twice when two copies run at the same time (chapters 05 and 06).
# * Only `keyed` never charges twice and never fails in silence. Chapter 06 shows why that needs
#   the payment provider's help.

# %% [markdown]
# ## Try it
#
# A row the table does not have: `naive`, with S3 delivering the event twice, a few seconds apart.
# The function fails after the charge once: the first time any invocation gets there, and never
# again (`after_charge, once`). Lambda retries a failed invocation a minute later. How many times
# does the provider charge the customer? Put your guess in `my_guess` and run the check.

# %%
my_guess = None  # your answer here: a number

# %%
print(check_charges_guess(my_guess))

# %% [markdown]
# <details><summary>Solution</summary>
#
# Three. The first copy charges, then fails. The second copy arrives a few seconds later, charges
# and succeeds. A minute later Lambda retries the first copy, which charges again. `naive` never
# asks whether it has charged before, so every invocation that reaches the provider charges.
# </details>
#
# ## Summary
#
# * An idempotent operation can run twice with the effect of once; a charge cannot, unless we make it so.
# * S3 and Lambda deliver at least once: S3 may send an event twice, and Lambda retries failures.
# * Effectively-once charging is the handler's job, and the table shows which handlers do it.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [01 The naive scribe](01_the_naive_scribe.ipynb)
