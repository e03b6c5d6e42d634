# %% [markdown]
# # 01 The naive scribe
#
# Why does one upload become two charges?
#
# **After this chapter you can show how one upload becomes two or three charges, and why memory cannot stop it.**
#
# The first handler is the one most of us write first: take the event, charge the customer,
# write the charge into the ledger. Nothing in it is wrong line by line. The trouble is the
# platform around it, which repeats events on purpose.

# %% [markdown]
# ## Setup
#
# `LocalWorld()` builds a fresh local AWS with its clock at zero: the bucket, the ledger table,
# the provider's table and the failure queue, all on moto. The chapters call one such local AWS
# a *world*. Then the pieces this chapter looks at.

# %%
from idem import views
from idem.core.events import s3_test_event
from idem.core.handlers import naive
from idem.explore import scenarios as sc
from idem.lessons.scribes.retries import check_retry_prediction
from idem.sim.faults import FaultPlan
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, provider {world.provider_table}")
print(f"failure queue {world.queue_name}, clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## What S3 hands the function
#
# An upload into the bucket makes S3 send an `ObjectCreated:Put` notification. `world.upload`
# does a real `put_object` on the local bucket. `world.event` builds the notification the way S3
# writes it. The customer is the object's top-level folder, so this upload bills `alice`. That is
# a shortcut of the teaching handlers: chapter 03 shows where the handler to copy learns who pays.
# Three fields about the request (who sent it, from where) are left out on screen.

# %%
order = world.upload("alice/order-0001.csv", b"sku,qty\nledger,1\n")
event = world.event(order)
views.show_json(event, hide=("userIdentity", "requestParameters", "responseElements"))

# %% [markdown]
# Two fields of the `object` matter in later chapters:
#
# * The **version id** (`versionId`) is the id S3 gives each upload of an object in a versioned
#   bucket. Upload the same name again, and the new upload gets a new version id.
# * The **sequencer** is a hexadecimal value that grows with every event for one object key. It
#   tells you which of two events about one key came later.
#
# Everything a handler could use to recognise this piece of work is in there: the bucket, the key,
# the version id, the `eTag` and the sequencer. The **eTag** is a hash S3 gives the object; for a
# single-part upload that is unencrypted or uses S3's own keys, it is the MD5 of the bytes
# ([ETag](https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html)). The naive handler
# uses none of it.

# %% [markdown]
# ## The entry point
#
# Lambda calls one function with the whole event: the **entry point**. It builds the handler once
# per **container**, the process Lambda starts for the function and reuses for later invocations.
# Then it hands the handler each record. Its code is in
# [the appendix](13_appendix_the_local_aws.ipynb#entry-point); three things it does matter here:
#
# * The event holds a *list* of `Records`. S3 puts one upload in each notification today, but the
#   format allows several. Through SNS a function gets one message per invocation. Through an SQS
#   queue it gets a batch, up to 10 messages by default
#   ([SQS](https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html)).
# * The entry point handles every record, even after one fails. Then it fails the invocation, so
#   Lambda runs the *whole* event again, records that succeeded included.
# * When notifications go to an SNS topic or an SQS queue, S3 first sends them an `s3:TestEvent`.
#   A Lambda destination gets none: S3 only checks the function's permission
#   ([PutBucketNotificationConfiguration](https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketNotificationConfiguration.html)).
#   So a function sees one only when its events come through SNS or SQS. It has no records. The
#   entry point ignores it, with a log line, and succeeds.
#
# Here is that test event, sent through the local Lambda runtime. `LocalLambda` plays the Lambda
# service: `send` queues an event, and `run` invokes the function until nothing is left.

# %%
test_run = LocalLambda(world, world.env("naive"))
test_run.send(s3_test_event(world.bucket))
print(views.attempts_frame(test_run.run(),
                          columns=("t (s)", "attempt", "outcome", "dynamodb_calls", "result")))
print(views.fold(test_run.attempts[0].logs[0]))  # one JSON log line, folded to the page

# %% [markdown]
# One invocation, no DynamoDB call, no charge, and one log line that says why. The entry point
# writes each log line as one JSON object, folded here to fit the page.

# %% [markdown]
# ## The handler
#
# Here is the naive scribe. It is the code you would ship: nothing in it knows about tests.
# `charge_step` asks the payment provider to move the money. The local runtime makes the handler
# fail from outside, at its calls: the provider's charge and each DynamoDB request.

# %%
views.show_source(naive.handle)

# %% [markdown]
# ## One failure, two charges
#
# Now run it the way Lambda would. The function fails at the fault point `after_charge`, `once`:
# the first time it gets past the provider call, it raises. The provider charged, but its answer
# never reached the function: think of a network timeout on the way back.

# %%
runtime = LocalLambda(world, world.env("naive"), fault=FaultPlan.at_point("after_charge", "once"))
runtime.send(event)
attempts = runtime.run()
views.attempts_frame(attempts, columns=("t (s)", "attempt", "steps", "outcome", "dynamodb_calls"))

# %% [markdown]
# Two invocations. The `steps` column lists the points each one reached. The first charged, then
# failed before its DynamoDB call. Lambda retried it 60 virtual seconds later, and the retry
# charged again and succeeded. Ask the provider, the ground truth for money, and the ledger, the
# system's own record:

# %%
for charge in world.provider().charges():
    print(f"{charge.id}  {charge.customer}  {charge.amount / 100:.2f}\n    for {charge.reference}")
print("ledger entry for alice (charges, cents):", world.ledger().entry("alice"))

# %% [markdown]
# One upload, two charges of 5.00, and a ledger that knows of only one: the first attempt died
# before it could write its entry. Nothing alarms. The logs show one ordinary error, then a
# success. The difference turns up weeks later, in a customer's bank statement.
#
# The retry is what the Lambda service does after a function error in an asynchronous invocation.
# It tries again about a minute later, then about two minutes after that
# ([AWS](https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)).
# **`MaximumRetryAttempts`** (0 to 2, default 2) sets how many retries. When they are used up,
# the event goes to the failure queue. [The appendix](13_appendix_the_local_aws.ipynb#local-runtime)
# shows how the local runtime does the same.

# %% [markdown]
# ## The same story on a clock
#
# A timeline of the same scenario, this time with the fault on *every* attempt. Each mark is one
# invocation, labelled with its attempt and its container. Lambda runs a function in containers
# and reuses one for the next invocation when it can. A **cold start** is Lambda starting a new
# container: the module code runs again, and its globals start empty. The timeline marks one
# with `*`.

# %%
every_time = sc.run(sc.Scenario("naive", "after_charge", "always"))
fig = views.timeline(every_time)

# %% [markdown]
# Three attempts at t = 0, 60 and 180 s, three charges. Then Lambda sends the event to the failure
# queue. The message is Lambda's account of the failed invocation. It carries the original event
# (left out here), so nothing is lost, but the customer has already paid three times. Its
# `responsePayload` is the last error: `InjectedFault` is the local runtime's fault.

# %%
views.show_json(every_time.failures[0], hide=("requestPayload", "errorMessage"))

# %% [markdown]
# The `errorMessage` is the text of the exception. Here it is the local runtime's, and
# `arrival 3` counts how often this upload's work reached the fault point:

# %%
print(every_time.failures[0]["responsePayload"]["errorMessage"])

# %% [markdown]
# ## One event, two uploads
#
# What does a failing record do to the others in its event? Two new uploads, by `bob` and
# `carol`, in one event. The function fails after the first charge of the invocation, once. This
# world's clock has kept running since the runs above, so the first attempt starts at t = 60 s.

# %%
pair = world.event(world.upload("bob/order-0002.csv"), world.upload("carol/order-0003.csv"))
batch = LocalLambda(world, world.env("naive"), fault=FaultPlan.at_point("after_charge", "once"))
batch.send(pair)
print(views.attempts_frame(batch.run(), columns=("t (s)", "attempt", "outcome", "dynamodb_calls")))
for account in ("bob", "carol"):
    charged = sum(charge.customer == account for charge in world.provider().charges())
    counted = world.ledger().entry(account)[0]
    print(f"{account}: charged {charged} times, the ledger counts {counted}")

# %% [markdown]
# Bob's record failed, and carol's succeeded in the same invocation. But the invocation failed, so
# Lambda retried the whole event. Carol's upload had done nothing wrong, and she paid twice. A
# handler must be safe to repeat for every record, not only the one that failed.

# %% [markdown]
# ## The second source of repeats: S3 itself
#
# Even with no failure at all, S3 may deliver an event twice. It is rare, but documented: S3's
# notifications "are designed to be delivered at least once"
# ([S3 event notifications](https://docs.aws.amazon.com/AmazonS3/latest/userguide/NotificationHowTo.html)).
# The handler cannot tell the copies apart unless it looks.

# %%
copies = [sc.run(sc.Scenario("naive", "none", "-", delivery)) for delivery in sc.DELIVERIES]
views.outcome_frame(copies,
                    columns=("delivery", "charges", "ledger_charges", "invocations", "verdict"))

# %% [markdown]
# A duplicate delivery, one after the other, charges twice. So does a copy that runs at the same
# time as the first. The function did exactly what it says, every time.

# %% [markdown]
# ## Memory is per container
#
# A warm container, one that is reused, keeps its module globals from the last invocation. After
# a cold start they are empty. The local runtime does the same: each container loads its own copy
# of `idem.core.entry`. Here is the same failing upload, with containers reused, or fresh for
# every attempt:

# %%
trap = [sc.run(sc.Scenario("naive", "after_charge", "always", reuse_containers=warm))
        for warm in (True, False)]
views.outcome_frame(trap,
                    columns=("containers", "charges", "invocations", "in_failure_queue", "verdict"))

# %% [markdown]
# The verdict is the same: naive remembers nothing, so where it runs cannot matter. What differs
# is where the retries ran. Here are the containers of the second run: each retry started in a
# new container, with nothing remembered from the last.

# %%
views.attempts_frame(trap[1], columns=("t (s)", "attempt", "container", "outcome"))

# %% [markdown]
# So picture a handler that keeps "I already charged for this" in a module-level set. The retry
# at t=60 s starts in container c2, whose set is empty, and charges again. No run here shows that
# handler; the container column is the whole argument. Anything a handler must remember between
# invocations belongs in a store every container can see. The rest of the workbook keeps it in
# DynamoDB.

# %% [markdown]
# ## Explore
#
# Pick a handler, a fault point, how often it fails and how S3 delivers. Watch the counts and the
# timeline change. Try `robust` with `after_charge` and `keyed` with the same, or `claim_first`
# with `at_charge, always`. The next chapters explain each of them.

# %% tags=["nbval-ignore-output"]
views.outcome_explorer()

# %% [markdown]
# The same call with the widget's starting values, so this page reads the same without widgets:

# %%
_ = views.explore_outcome("naive", "after_charge", "once", "single")

# %% [markdown]
# ## What the table and the queue hold afterwards
#
# The ledger table holds one entry per account, and nothing else. There is no record of *which*
# upload was charged, or whether it finished: nothing to check a retry against. The failure queue
# of this world is empty: no run in it used up its retries. (The run on a clock above had a
# world of its own.)

# %%
views.compact_items(world.ledger().items())

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# A case this chapter did not run. S3 delivers one upload's event twice, and every attempt of
# `naive` fails after its charge. Predict how many times the provider charges the customer
# under each `MaximumRetryAttempts` setting: 0, 1 and 2. Write your three numbers first, then run
# the check, which runs all three.

# %%
my_charges = {0: None, 1: None, 2: None}  # your answer here: charges for each retry setting

# %%
print(check_retry_prediction(my_charges))

# %% [markdown]
# <details><summary>Solution</summary>
#
# `my_charges = {0: 2, 1: 4, 2: 6}`. Each copy of the event is one invocation, and each fails
# after its charge. Lambda retries each copy on its own, so every retry adds a charge per copy.
# With retries off, the customer still pays twice: the duplicate needs no failure at all. Retries
# are not the bug: they are how the platform makes sure work is not lost. The handler has to be
# safe to repeat.
# </details>
#
# ## Summary
#
# * One upload becomes two charges when the function fails after the charge: Lambda runs the
#   charge again a minute later, and, if that fails too, two minutes after that.
# * S3 can also deliver the same event twice, with no error anywhere; and one failed record makes
#   Lambda repeat every record of its event.
# * Memory cannot stop it: containers come and go, so "I already did this" belongs in a shared store.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [02, where two copies of one event agree which one does the work](02_the_atomic_claim.ipynb)
