# %% [markdown]
# # 13 Appendix: the local AWS
#
# How does the local AWS stand in for the real one?
#
# **After this appendix you can tell what AWS does from what the simulator adds, and read the code that fills each gap.**
#
# Every chapter ran on moto, in this process, on a virtual clock. The moto library answers the
# real boto3 API for S3, DynamoDB, SQS, Lambda and CloudFormation. It does not do everything AWS does. This
# appendix shows each gap, the code that fills it, and a run that shows it working. The code that
# fills the gaps never ships to Lambda: it lives in `idem/sim/` (the local AWS), `idem/explore/`
# and `idem/deploy/`. Two sections look inside code that does ship: the entry point and
# the provider stand-in.

# %% [markdown]
# Each gap, and the section that opens it:
#
# | AWS does | moto alone | the workbook adds | section |
# | --- | --- | --- | --- |
# | runs the function, retries, keeps containers, drops old events | runs Lambda code only in docker | a local runtime on a virtual clock | [the local runtime](#local-runtime) |
# | fails at calls: lost answers, dead processes | never fails | faults at the calls a handler makes | [faults at the boundaries](#faults-at-boundaries) |
# | checks a condition and writes in one step | reads, checks, then writes | one lock around its writes | [atomic writes](#atomic-moto) |
# | lets a minute pass before a retry | (the virtual clock moves; the wall clock does not) | Powertools reads the virtual clock | [the Powertools clock](#powertools-clock) |
# | deploys every setting, fills S3 events, deletes expired items | drops settings and fields, never deletes | the missing settings and fields | [deploy gaps](#deploy-gaps) |

# %% [markdown]
# ## Setup
#
# The pieces of the local AWS this appendix opens up.

# %%
from idem import views
from idem.core.clock import VirtualClock
from idem.core.entry import App
from idem.core.provider import Provider
from idem.deploy.aws import emulated
from idem.deploy.aws_rules import gaps
from idem.sim import atomic, boundary
from idem.explore import powertools as pt
from idem.explore import scenarios as sc
from idem.sim.powertools_entry import powertools_time
from idem.sim.runtime import DEFAULT_MAX_EVENT_AGE, RETRY_DELAYS, LocalLambda
from idem.sim.world import LocalWorld

print(f"retry delays after a failure: {RETRY_DELAYS} s; maximum event age by default: "
      f"{DEFAULT_MAX_EVENT_AGE} s")

# %% [markdown]
# ## The picture
#
# One upload's way through the local AWS. The cylinders and the queue are moto's. The boxes
# between them are the workbook's, apart from the handler, which is the code you ship.
#
# ```mermaid
# flowchart LR
#     U(["world.upload:<br/>put_object + the S3 event"]) --> Q["LocalLambda:<br/>async queue, virtual clock"]
#     Q -- invoke --> C["a container,<br/>warm or cold"]
#     C --> H["the handler<br/>(production code)"]
#     H -- "boto3 calls,<br/>botocore hooks" --> D[("moto DynamoDB,<br/>with one lock")]
#     H -- "charge,<br/>WatchedProvider" --> P[("provider stand-in")]
#     C -- "error: retry after 60 s, then 120 s" --> Q
#     Q -- "retries used up,<br/>or the event too old" --> F[["moto SQS:<br/>failure queue"]]
# ```

# %% [markdown]
# <a id="local-runtime"></a>
# ## The local Lambda runtime
#
# S3 hands an event to Lambda and gets no answer back: an asynchronous invocation. `LocalLambda`
# stands in for the Lambda service's side of it. Its `send` queues the event with a due time. Its
# `run` takes the next due event and moves the virtual clock to that time. Nothing sleeps. An
# event older than the maximum event age is not invoked: like Lambda, `run` drops it. If the
# function has an on-failure destination, it sends the event's invocation record there, with the
# condition `EventAgeExceeded` instead of `RetriesExhausted`
# ([invocation records](https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html)).
# It invokes the rest, unless the function's reserved concurrency is used up: then the event
# goes back to the queue, to be tried again after a backoff. `run` does it in these two methods:

# %%
views.show_source(LocalLambda._run, LocalLambda._start)

# %% [markdown]
# After a failed attempt, Lambda tries again about a minute later, then about two minutes after
# that. The `retries` setting is the function's `MaximumRetryAttempts`. Once they are used up,
# Lambda sends the invocation record to the on-failure destination. A function with no
# destination loses the event: Lambda discards it
# ([error handling](https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)).
# The runtime does the same: with no `failure_destination`, `_to_destination` sends nothing.

# %%
views.show_source(LocalLambda.after_failure, LocalLambda._to_destination)

# %% [markdown]
# The record has the shape AWS documents for an on-failure destination: the condition, the
# number of attempts, the original event and the error. The world puts it in the failure queue.
# In `idem check`'s worlds it goes straight into moto's SQS backend: the record is Lambda's own
# write, not a call the handler makes, so there is no request to sign and parse. Any other world
# sends it with `SendMessage`. The message is the same either way:

# %%
views.show_source(LocalWorld.send_to_queue)

# %% [markdown]
# Each invocation also needs a container.
# A warm one keeps its module globals. A new one loads the entry module afresh, as a cold start
# does, and with it the function's own helper modules beside it: a key or a cache one of them
# keeps at module level must not outlive its environment. A helper the function imports later,
# inside a call, is that environment's own too. While an environment runs, the names of the
# function's modules point at its copies; afterwards they are put back (`Container.running`).
# (The workbook's own handlers share one copy of their helpers, which keep no such state.) A
# process that died is never reused:

# %%
views.show_source(LocalLambda._acquire)

# %% [markdown]
# Here the keyed function fails before its charge, on one attempt or on all. Change the retries,
# how it fails, and whether containers are reused.

# %% tags=["nbval-ignore-output"]
views.runtime_explorer()

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.runtime_explore(2, "always", "exception", "warm")

# %% [markdown]
# Three attempts, a minute apart and then two, all in one warm container. Then the event reached
# the failure queue, and the record says why. Pick `crash` in the explorer: the process died, so
# each retry starts a cold container.

# %% [markdown]
# <a id="faults-at-boundaries"></a>
# ## Faults at the boundaries
#
# A handler has no test hooks. The runtime makes it fail where the real world does: at its calls.
# Every AWS call goes through a boto3 client of one watched session. For each call, botocore fires a
# `before-call` and an `after-call` event on it. The hooks find the invocation this thread runs
# and let its `Watch` decide:

# %%
views.show_source(boundary._before_call, boundary._after_call)

# %% [markdown]
# Two kinds of call are not counted in `_after_call`. The first is a publish to an SNS FIFO topic.
# Such a topic accepts, but does not deliver, a message whose deduplication ID it saw within its
# deduplication interval, five minutes at least
# ([PublishBatchRequestEntry](https://docs.aws.amazon.com/sns/latest/api/API_PublishBatchRequestEntry.html)).
# So the check counts what the topic delivers, as it does for messages sent to a queue.
#
# The second is a batch call answered with every entry failed. `BatchWriteItem`,
# `BatchGetItem`, `SendMessageBatch`, `PublishBatch` and `PutEvents` answer a failed entry with
# HTTP 200, in their answer's body (for `BatchWriteItem`, its `UnprocessedItems`:
# [BatchWriteItem](https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html)).
# moto never fails an entry, so the runtime makes such answers itself. Nothing landed, so the
# call counts no effect.
#
# `_after_call` also keeps each DynamoDB request refused with a `ValidationException`, with its
# parameters. Such a request is refused on every attempt. If the clean run charged and the ledger
# line it sent was refused this way, the check reports a break even when the handler swallowed
# the error.
#
# The payment provider's client gets a thin wrapper, so its `charge` is a boundary too, and so is
# its look-up, `find_charges`. The look-up finds the charges made with an order's key. keyed asks
# for them once the provider may have forgotten that key (chapter 06). A failed look-up raises what
# the provider raises when it cannot serve a request: nothing was read. The wrapper also keeps each charge the provider refused as
# invalid (a 400). No retry of that request will charge the order, so a clean run that swallowed
# such a refusal has lost the order:

# %%
views.show_source(boundary.WatchedProvider.charge)

# %% [markdown]
# At each boundary the `Watch` counts the arrival, starts a concurrent copy if one waits there,
# and fails the call if the fault plan says so. A fault after a call means the call did its work
# and its answer was lost. A fault plan can carry a second one, `also`. It fails a call that only
# the first fault led to, such as a retry asking Stripe whether its first attempt charged, or taking
# over a claim. Such a call can come at a boundary whose name the clean run's call has. So each AWS
# call also has a role: what it asks, such as its table and its expressions, not its data
# (`idem.sim.platform.call_roles`). `at_boundary` picks the plan that fails each boundary, for the role of
# the request there:

# %%
views.show_source(boundary.Watch.arrive)

# %% [markdown]
# The keyed function, with the answer of its first charge lost (`after_charge`, once). A row per
# boundary each invocation crossed:

# %%
lost_answer = sc.run(sc.Scenario("keyed", "after_charge", "once"))
views.crossings_frame(lost_answer)

# %% [markdown]
# The fault struck after the charge went through, so money moved and the function never heard.
# The handler released its lease and raised. The retry made the same charge call with the same
# key. The handler did not know it was being tested: only its calls were.

# %% [markdown]
# <a id="atomic-moto"></a>
# ## moto's conditional writes, made atomic
#
# DynamoDB checks a write's condition and applies the write as one step on the item. In moto, a
# put reads the item, checks the condition, and then writes, with no lock in between. Two threads can both
# read "absent" and both win a put with `attribute_not_exists(pk)`. So `LocalWorld` puts one lock
# around moto's DynamoDB methods when the first world starts:

# %%
views.show_source(atomic.make_dynamodb_atomic)

# %% [markdown]
# In moto as shipped the race is real but rare. To see it every time, a test widens moto's gap
# between its read and its write:

# %%
views.show_source(atomic.widened_condition_window)

# %% [markdown]
# Eight real threads race one conditional put per round, ten rounds, with the gap widened by 2 ms.
# First against moto without the lock, then with it. Threads cannot be seeded, so the first
# count changes from run to run, and this cell's output is not compared:

# %% tags=["nbval-ignore-output"]
unlocked, locked = views.lock_races(threads=8, rounds=10)
print(unlocked.summary())
fig = views.lock_chart(unlocked, locked)

# %% [markdown]
# With the lock, every round has one winner, however wide the gap:

# %%
print(locked.summary())

# %% [markdown]
# The lock makes the local table behave like DynamoDB. Without it, chapter 02's conditional put
# would sometimes let two copies charge, and the workbook would blame the pattern for moto's gap.

# %% [markdown]
# <a id="powertools-clock"></a>
# ## Powertools on the virtual clock
#
# Powertools computes a record's expiry and its in-progress expiry from `datetime.now()`. On AWS
# that is the right clock. Locally, a retry a minute later is a minute later only on the virtual
# clock. So while an invocation runs, Powertools' modules read a `datetime` that asks the virtual
# clock. With the system clock, the shim does nothing:

# %%
views.show_source(powertools_time)

# %% [markdown]
# What Powertools reads, on a virtual clock moved on by an hour:

# %%
clock = VirtualClock()
clock.advance(3600)
views.powertools_reads(clock)

# %% [markdown]
# Inside the shim, Powertools' time is the virtual clock's; outside, it is the wall clock again.
# It matters in chapter 08's crash: the function dies after the charge and holds an `INPROGRESS`
# record until its deadline.

# %%
crash = pt.run(sc.Scenario("powertools", "after_charge", "once", how="crash"))
views.attempts_frame(crash, columns=("t (s)", "attempt", "container", "outcome"))

# %%
views.items_frame([item for item in crash.items if "expiration" in item],
                  columns=("status", "expiration", "in_progress_expiration"))

# %% [markdown]
# The retry came after the first deadline on the virtual clock, so it took the record over. Both
# expiry times are on the virtual clock too. On the wall clock the retry would have come a few
# milliseconds later, and Powertools would have refused it as still in progress.

# %% [markdown]
# <a id="deploy-gaps"></a>
# ## What moto leaves out
#
# Some gaps show up at once. This asks moto, now, for its own S3 notification of an upload, and
# for an item whose TTL passed in 1970:

# %%
views.probe_moto()

# %% [markdown]
# moto's notification gives the object's key, size and eTag, but no `versionId` and no
# `sequencer`, though `put_object` returned a version. So `LocalWorld.upload` builds the record
# as S3 writes it, from the `put_object` response:

# %%
views.show_source(LocalWorld.upload)

# %% [markdown]
# TTL is enabled, and the item from 1970 is still there: moto never deletes. That is why the
# handlers check expiry in code (chapter 07), which you should do on AWS too.
#
# A deploy has more gaps. The CloudFormation in moto ignores the SAM transform, so the deploy tool
# expands it first with aws-sam-translator. It cannot make a Lambda alias nor CodeDeploy's
# resources, so the tool leaves them out and points what named the alias at the function. The
# same CloudFormation also drops bucket versioning,
# the bucket's notification, the table's TTL and the function's event-invoke config. Then
# `gaps.check` compares
# each setting in the expanded template with the deployed resource. `apply` sets what is missing
# with the call a person would make:

# %%
views.show_source(gaps.apply)

# %% [markdown]
# Last, moto runs Lambda code only inside docker. On a moto deploy, the tool reads the deployed
# function's settings and runs it with `LocalLambda`, against the stack's own tables and queue:

# %%
views.show_source(emulated.function_settings, emulated.run_function)

# %% [markdown]
# Chapter 09's rehearsal shows the settings it filled. On AWS the same check finds all of them in
# place.
#
# Chapter 09 makes its stack through a change set, where moto 5.2 has two more gaps.
# `ExecuteChangeSet` makes the resources but never evaluates the template's `Outputs`: `fill_gaps`
# does, first. And the stack records only its own three events, none per resource, so chapter 09
# reads the order of creation from the template.

# %% [markdown]
# <a id="entry-point"></a>
# ## Inside the entry point
#
# Two pieces of code the chapters use without teaching them line by line. The first is the entry
# point of chapter 01, which ships to Lambda. It reads the event's records, hands each to the
# handler, logs what failed, and fails the invocation if any record failed:

# %%
views.show_source(App.handle)

# %% [markdown]
# <a id="provider-stand-in"></a>
# ## Inside the provider stand-in
#
# The second is the payment provider of chapter 06. It ships in the core, but only the demo stack
# uses it: production pays through Stripe. It keeps Stripe's rules
# for an idempotency key in a DynamoDB table of its own. The key's first answer is saved in one
# transaction with the charge, and a repeat with the same parameters (compared by a fingerprint)
# gets that answer back:

# %%
views.show_source(Provider.charge, Provider._replay)

# %% [markdown]
# ## Try it
#
# The runtime drops events older than `max_event_age`, and sends their records to the failure
# queue. A function fails before its charge on
# every attempt, with two retries and `MaximumEventAgeInSeconds` set to 120. Predict how many
# attempts run, and the `condition` in the record that reaches the failure queue.

# %%
my_attempts = None  # your answer here: a number
my_condition = None  # your answer here: the condition's name, a string

# %%
print(views.check_event_age(my_attempts, my_condition, max_event_age=120))

# %% [markdown]
# <details><summary>Solution</summary>
#
# `my_attempts = 2`, `my_condition = "EventAgeExceeded"`. The first attempt fails at t = 0 s. The
# first retry is due 60 s later; the event is 60 s old, so it runs and fails. The second retry is
# due 120 s after that, at t = 180 s. The event is then older than 120 s, so `run` sends it to the
# failure queue without invoking. Lambda names that condition `EventAgeExceeded`.
# </details>

# %% [markdown]
# ## Summary
#
# * The local runtime does Lambda's side of an async invocation, on a virtual clock. It queues,
#   retries after a minute and two more, keeps containers warm, drops old events, and fills the failure queue.
# * Faults come from outside the handler, at its calls, through botocore hooks and a provider
#   wrapper. One lock makes moto's conditional writes atomic, as DynamoDB's are.
# * A shim puts Powertools on the virtual clock, and the workbook fills what moto's S3 events,
#   TTL and CloudFormation leave out. None of that ships; the entry point and the provider
#   stand-in it looked inside do.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Back to the start:** [00 Start here](00_start_here.ipynb)
