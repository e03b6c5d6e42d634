# %% [markdown]
# # 11 Check your own handler
#
# Does your handler charge once, whatever S3 and Lambda do to it?
#
# **After this chapter you can check any handler the way this workbook checks its own, and fix it where it breaks.**
#
# Every pattern in this workbook was run through every fault and delivery that this check builds
# for one upload. The same machinery takes your handler, unchanged. Faults happen at the calls
# your handler makes, as they do on AWS. A handler that charges through a client it builds needs
# one hook only, the function that builds it. One that calls Stripe's SDK, or charges nobody,
# needs none.

# %% [markdown]
# ## Setup
#
# Your handlers go into a scratch folder next to this notebook (git ignores it). The check finds
# them by module name, the way Lambda does. It builds its own local AWS, a fresh one every 80
# runs. Each run starts on a virtual clock at zero.

# %%
import shutil
import sys
from pathlib import Path

from idem import views
from idem.core.handlers.keyed import KeyedCharger
from idem.explore.check import check_handler
from idem.lessons.shipping.check_prediction import check_prediction

SCRATCH = Path("scratch")
shutil.rmtree(SCRATCH, ignore_errors=True)  # a fresh start: no handler from an earlier run
SCRATCH.mkdir()
if str(SCRATCH.resolve()) not in sys.path:
    sys.path.insert(0, str(SCRATCH.resolve()))
BOOKS = ["dynamodb:UpdateItem"]  # the call that writes a charge into the books (see below)

# %% [markdown]
# ## What the check does
#
# First, one clean run: no fault, one delivery. It records every call the handler makes, in
# order. Each call has two boundaries, before and after; returning is one more. A fault can
# strike at any boundary: an exception, or the process dying. S3 can deliver the event once,
# twice, or start a copy mid-run. Lambda can retry 0, 1 or 2 times. One choice of each (where
# the fault strikes, how the event arrives, how often Lambda retries) is a **schedule**. The
# check builds every schedule the clean run allows.
#
# The services behave as AWS documents, not as a test double would. One example: a DynamoDB read
# without `ConsistentRead` is DynamoDB's default, and it "may not reflect the results of a recently
# completed write" ([read consistency](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html)).
# So in every schedule such a read misses what the function wrote in the second before it. The
# clean run reads the latest items: it is the path every schedule is measured against.

# %% [markdown]
# ### Two schedules that carry no fault
#
# Two more kinds of schedule reach bugs that faults alone cannot. In an overwrite schedule, a
# second upload arrives with the same name, after the first is done or while the first sits at
# any boundary. It is one of two things (chapter 03). A retried PUT sends the same bytes: the same
# order, which must be charged no more often than in the clean run. A second order sends new
# bytes, with a new `order_id`, and must get its own charge. A key built from the name alone
# never charges the second order. A key built from the upload charges the retried PUT twice. The
# check's buckets take every PUT. A bucket whose policy requires **If-None-Match** (chapter 03)
# refuses a second PUT of a name with 412, so no second event comes; the check does not model
# that.
#
# In a slow schedule, one call takes until 1 s before the function's timeout, and a copy of the
# event starts while the call is in flight.
# Every clock the handler reads moves meanwhile: `time.time`, `time.monotonic`, `datetime.now`
# and the context's remaining time. A lease or a TTL shorter than the work runs out, and the copy
# takes the work over. These two kinds add no faults, which keeps them few. The report counts
# the schedules each kind adds.

# %% [markdown]
# ### Time, accounts, repeated failures and names
#
# Eight more families, each small, reach what happens later or elsewhere:
#
# * `late`: no fault. A copy of the event comes at each end of its documented range, and at a few
#   seeded times inside it. Then the same order is uploaded again, a day and three days later.
# * `retry_ends`: a fault on two arrivals, with Lambda's two retries both at the low ends of
#   their ranges (one and two minutes), and both at the high ends (the event's maximum age).
# * `again`: every attempt fails. Then the event is redriven from the failure queue, or the same
#   order is uploaded again: a day and a second later, and in the last second the queue keeps the
#   event (four days).
# * `accounts`: another account uploads an order with the same order id and the same bytes.
#   Two accounts' order "1001" are two orders, and each must be charged. For a handler that reads
#   the customer mapping, one more such upload's file names the first account's customer, and its
#   metadata the first account. The uploader never chooses who pays: charging that customer for it
#   is a break.
# * `zones`: `retry_ends` at the high ends, with the check's clock started 6, 12 and 18 hours
#   earlier than usual (the usual start is below). From these starts a retry crosses midnight in
#   every time zone east of UTC too, up to UTC+14.
# * `runs`: one call fails two, three or every time in a row.
# * `uploads`: the clean run's order, uploaded by a browser's POST and by a multipart upload
#   instead of a PUT. Each sends its own event name (`ObjectCreated:Post`,
#   `ObjectCreated:CompleteMultipartUpload`), and each must be charged once.
# * `names`: the clean run's upload, at names that S3 writes URL-encoded into its event.
#
# Every delay is drawn from its documented range, not set to one point. The clock starts on a
# Sunday, 31 December, at 23:58 UTC. So a retry two minutes later falls on another day, week,
# month and year in UTC (and, in the family `zones`, in the zones east of it).
#
# Then comes a second round, the family `second_fault`. A fault can lead a handler to a call its
# clean run never made. A retry takes over the claim an earlier attempt left, or asks Stripe
# whether that attempt charged. An attempt on its way to a failure releases its claim. The first
# round never fails such a call, because it fails only calls the clean run made. So each schedule
# that reached one runs again, with that call failing too on its first arrival. Either the
# service throttles it (refuses it as too many requests), or its answer is lost and botocore, the
# SDK under boto3, sends the request again. An error is not an answer. A handler that
# reads a failed takeover as "another attempt has the order" returns success on an unpaid order,
# and breaks. So does one that takes the refusal of its own resent takeover for another's.
#
# A schedule with no fault can reach a new call too. A second order at the same name may replace
# the first's file before it is read, or another account's file may name the first account's
# customer. keyed parks that order (chapter 03), with a write the clean run never made. That
# write is failed the same way.
#
# A call can also be new at a boundary the clean run crossed. keyed's takeover of a claim is the
# second `PutItem` of its invocation, as its clean run's booking is. So the check tells calls
# apart by what they ask as well: the table, the expressions, the attribute names and the status
# words they write, not the order's data. A request that asks what none of the clean run's asked
# is failed the same way. The report names this family only when it ran.

# %% [markdown]
# ### How an upload is judged
#
# Each schedule runs on its own upload. The check counts each effect where it lands, not where an
# answer comes back. Charges are read from the provider's own records, so a charge made under a
# saved 500 counts (Stripe saves a 500 with its key and replays it). Ledger lines are read from
# your table (see *Name the books*). Any call you name is counted too, when it succeeds: a
# conditional write whose condition failed wrote nothing and is not counted. (A write you name is
# judged by the state it leaves: see *Handlers that charge nobody*.) Then the check
# judges the upload against the clean run, with the verdicts of chapter 00 and two more:
#
# | verdict | the upload, against the clean run | a break? |
# | --- | --- | --- |
# | `exactly_once` | charged and booked as often as in the clean run | no |
# | `double_charge` | charged more often | yes |
# | `double_effect` | a named effect (not the charge) happened more often | yes |
# | `silent_mismatch` | charged, but the books or a named effect fell short, and the failure queue is empty | yes |
# | `silent_loss` | not charged, and the failure queue is empty | yes |
# | `needs_attention` | charged, the work unfinished, and the event is in the failure queue | no |
# | `failed_visibly` | not charged, and the event is in the failure queue | no |
# | `declined` | the provider declined the card: final for its key, no money moved, nothing retried | no |
#
# A **break** is a double charge, a double effect, a silent mismatch or a silent loss. The
# other verdicts are fine: a failure that reaches the failure queue is one a person will see.
# Each break also names what went wrong: two charges for one upload, no charge for an upload, a
# charge with no ledger line. With two uploads in one schedule, each upload's money is judged on
# its own, and the worst verdict counts. The **check holds** for a handler when no schedule breaks. (The
# rules in code: `idem.explore.judge.verdicts.judge_upload`.)
#
# Counting is not enough where money is concerned: a handler can charge each order once and still
# charge the wrong amount, or the wrong customer, while its books agree. So the check reads each
# charge too. Its amount and currency must be what the clean run's charge moved for the same order
# file; another is a `silent_mismatch` (one order, two prices). A handler may read the customer
# mapping of chapter 03 (`account#<ACCOUNT>`). Then the check links a customer to each account it
# uploads under, as the runbook would. Where the clean run charged the customer linked to the
# upload's account, every charge must go to a customer linked to an account of that schedule. A
# customer charged for another account's order is a `double_charge`. The check cannot know your
# pricing rule, so a clean run that charged another price than its order file says is not a break:
# the report says it in a note under the verdict. (The rules in code: `idem.explore.judge.money`.)
#
# A handler may also write into the bucket that triggers it: an archive copy, a marker, a report.
# S3 sends an event for that object too, like any upload
# ([Using Lambda with Amazon S3](https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html)).
# So the check delivers it a second after the write, and follows such a chain three writes deep.
# Your own copy of an order file is no new order. If the clean run charges it, the clean run
# charges its one order twice, a `double_charge`. If its invocation fails and moves no money, the
# report says so in a note.

# %% [markdown]
# ## A handler to check
#
# Here is a handler of the kind people write: it reads which order the upload carries, claims
# the order, charges, then writes the charge into the books. It reads its table from `os.environ`
# and uses `boto3.client`, as on Lambda. The check sets `LEDGER_TABLE` and `PROVIDER_TABLE` for it.
#
# It names the ORDER, not the upload: the bucket and the `order_id` the file holds. An uploader
# whose PUT timed out sends the same file again, a new version of the same order, and that
# must not be charged again ([one charge per order](../docs/one_charge_per_order.md)). It reads
# the file at this very upload: by its version id, or, in a bucket without versioning (no
# `versionId` in the event), only while the file's eTag still matches (`IfMatch`). A second order
# written over the first in the meantime then fails the read, instead of being read for the first.
#
# It builds its payment client with `make_provider()`. In your own handler, that function
# returns your real client (Stripe's, say). The check finds it by that name (or by
# `--provider-factory NAME`) and swaps in the workbook's provider stand-in: the one thing it
# replaces. This handler's version returns the stand-in already, so it runs outside the check
# too. The stand-in's `charge` takes `customer`, `amount`, `currency`, `reference`
# and an optional `idempotency_key`, and returns a charge with an `id` and a `replayed` flag.
# The check counts the charges it makes; a replay moves no money and is not counted.
#
# Many handlers have no such function: they call Stripe's SDK themselves
# (`stripe.PaymentIntent.create(...)`, or a `StripeClient` made at cold start). That works too.
# When the handler's module imports `stripe` (or with `--provider stripe`), the check points the
# SDK at a local Stripe that keeps Stripe's rules. Each PaymentIntent the handler creates is then
# a boundary named `provider:charge`, like the stand-in's `charge`. The check fails the invocation
# before or after it. It has Stripe answer with an error: 503 (down), a saved 500, 409 (the key is
# in use), 429 (too many requests), or a decline. It gives a card that needs its holder: declined
# off-session, and on-session a 200 whose status is `requires_action`, with no money moved. So a
# handler must read the PaymentIntent's `status`. And the check counts each charge for the
# invocation that sent it.

# %%
# %%writefile scratch/broken_handler.py
"""Charge the customer for each uploaded order, then write the charge into the books."""
import json
import os
from urllib.parse import unquote_plus

import boto3

PRICE_CENTS = 500
dynamodb = boto3.client("dynamodb")
s3_client = boto3.client("s3")


def make_provider():
    """Your payment provider's client (Stripe's, say). Here, the workbook's stand-in."""
    from idem.core.clock import SystemClock
    from idem.core.provider import Provider

    return Provider(dynamodb, os.environ["PROVIDER_TABLE"], SystemClock())


def lambda_handler(event, context):
    table = os.environ["LEDGER_TABLE"]
    provider = make_provider()
    for record in event["Records"]:
        s3 = record["s3"]
        bucket, key, obj = s3["bucket"]["name"], unquote_plus(s3["object"]["key"]), s3["object"]
        # the order file at this very upload: by its version,
        # or (no versioning) while its eTag matches
        exact = (
            {"VersionId": obj["versionId"]}
            if "versionId" in obj
            else {"IfMatch": f'"{obj["eTag"]}"'}
        )
        body = s3_client.get_object(Bucket=bucket, Key=key, **exact)["Body"].read()
        # the order: a retried PUT names it again
        order = f"{bucket}/{json.loads(body)['order_id']}"
        customer = key.split("/")[0]
        try:  # the guard: claim the order before doing the work
            dynamodb.put_item(TableName=table, Item={"pk": {"S": f"claim#{order}"}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            continue  # claimed already: the work was done before
        provider.charge(customer=customer, amount=PRICE_CENTS, currency="usd", reference=order)
        dynamodb.update_item(  # the books: one more charge on the customer's account
            TableName=table, Key={"pk": {"S": f"account#{customer}"}},
            UpdateExpression="ADD charges :one, cents :cents",
            ExpressionAttributeValues={":one": {"N": "1"}, ":cents": {"N": str(PRICE_CENTS)}})
    return {"status": "done"}

# %% [markdown]
# ## Count the money
#
# Check it. Lambda names a handler `file.function`; the check takes `module:function` (a module
# it can import, as here) or `path/to/file.py:function`. To keep
# this page quick, every check here tries one retry setting, `retries=(1,)`: Lambda retries once.
# Without `retries`, the check tries 0, 1 and 2. The families `retry_ends` and `zones` need two
# retries, so they count 0 schedules on this page.

# %%
money = check_handler("broken_handler:lambda_handler", retries=(1,), workers=1)
explained = money.explain()
smallest_at = explained.index("  schedule:")  # printed in two parts, to keep each short
with views.folded_output():  # long lines wrapped to the page
    print(explained[:smallest_at].rstrip())

# %% [markdown]
# The second line lists the boundaries the clean run crossed: the read of the order file, a put,
# the charge, an update. Then come the verdicts. There is no `double_charge` row: the claim lets
# one attempt per order through, so no retry, copy or retried PUT charges again. The rest of the
# report is the smallest schedule that breaks:

# %%
with views.folded_output():
    print(explained[smallest_at:])

# %% [markdown]
# The claim's put landed, but its answer was lost on the way back. No Lambda retry was needed.
# botocore, the SDK under boto3, sends a request again by itself when its answer is lost
# ([retries](https://docs.aws.amazon.com/boto3/latest/guide/retries.html)). The resent put found
# the claim already there and failed its condition. The handler read that as "claimed already",
# skipped the work and returned `ok`. No money moved, and nothing says so.
#
# The bracket after the number of breaks names the families that broke. All six `accounts`
# schedules break too: the claim names an order by its bucket and order id, so bob's order
# "1001" is turned away as if it were alice's.
#
# The note at the end is the price check of *How an upload is judged*. This handler reads the order
# file for its order id, but charges `PRICE_CENTS`, its own price, not the file's `amount_cents`.
# That is its rule, so the check says it and does not count it as a break.

# %% [markdown]
# ## Name the books
#
# The check counts the charge because every handler here makes one. It reads the books where
# you say they are. By default a ledger line is an item of `LEDGER_TABLE` with a `charge_id`
# attribute (`books="TABLE_ENV:ATTRIBUTE"` names another place). This handler keeps a running
# total instead, so the report above said its books were not judged. It writes them with
# `UpdateItem`, so name that call as an effect, and it is counted too:

# %%
report = check_handler("broken_handler:lambda_handler", effects=BOOKS, retries=(1,), workers=1)
views.verdicts_frame({"charge counted": money, "charge and books counted": report})

# %%
hidden = [a for a, b in zip(money.results, report.results)
          if a.verdict == "exactly_once" and b.verdict == "silent_mismatch"]
print(f"{len(hidden)} schedules looked exactly_once while only the charge was counted")

# %% [markdown]
# Notice the new row. In those schedules the customer paid once and the books never heard of
# it. Counting only the money, they looked like success. Name every write that must happen once:
# the books, a receipt message (`sqs:SendMessage`), an email.

# %% [markdown]
# ## The smallest silent mismatch
#
# Each result keeps its schedule and every invocation it ran. Here is the smallest schedule that
# ends in a silent mismatch, a row per boundary crossed:

# %%
mismatch = min((r for r in report.broken if r.verdict == "silent_mismatch"),
               key=lambda r: r.schedule.size)
print(mismatch.schedule.label())
views.schedule_frame(mismatch)

# %%
fig = views.timeline(mismatch.attempts, title=f"broken_handler: {mismatch.verdict}")

# %% [markdown]
# The first attempt charged, and the answer never came back: an error after the charge. Lambda
# retries a minute later at the earliest, and a throttled retry up to six hours later; the check
# draws the time from that range (the column `t (s)`). The retry tried to claim the order, found
# its own claim, and stood down. The charge stands, the books stay empty, and the failure queue
# is empty too.

# %% [markdown]
# ## A first fix, checked
#
# The claim is what strands the work, so take it out. The handler below is the same, minus the
# claim. Write it, check it again, and compare:

# %%
# %%writefile scratch/no_claim.py
"""Charge the customer for each uploaded order, then write the charge into the books."""
import json
import os
from urllib.parse import unquote_plus

import boto3

PRICE_CENTS = 500
dynamodb = boto3.client("dynamodb")
s3_client = boto3.client("s3")


def make_provider():
    """Your payment provider's client (Stripe's, say). Here, the workbook's stand-in."""
    from idem.core.clock import SystemClock
    from idem.core.provider import Provider

    return Provider(dynamodb, os.environ["PROVIDER_TABLE"], SystemClock())


def lambda_handler(event, context):
    table = os.environ["LEDGER_TABLE"]
    provider = make_provider()
    for record in event["Records"]:
        s3 = record["s3"]
        bucket, key, obj = s3["bucket"]["name"], unquote_plus(s3["object"]["key"]), s3["object"]
        # the order file at this very upload: by its version,
        # or (no versioning) while its eTag matches
        exact = (
            {"VersionId": obj["versionId"]}
            if "versionId" in obj
            else {"IfMatch": f'"{obj["eTag"]}"'}
        )
        body = s3_client.get_object(Bucket=bucket, Key=key, **exact)["Body"].read()
        # the order: a retried PUT names it again
        order = f"{bucket}/{json.loads(body)['order_id']}"
        customer = key.split("/")[0]
        provider.charge(customer=customer, amount=PRICE_CENTS, currency="usd", reference=order)
        dynamodb.update_item(  # the books: one more charge on the customer's account
            TableName=table, Key={"pk": {"S": f"account#{customer}"}},
            UpdateExpression="ADD charges :one, cents :cents",
            ExpressionAttributeValues={":one": {"N": "1"}, ":cents": {"N": str(PRICE_CENTS)}})
    return {"status": "done"}

# %%
no_claim = check_handler("no_claim:lambda_handler", effects=BOOKS, retries=(1,), workers=1)
views.verdicts_frame({"given handler": report, "no claim": no_claim})

# %%
print(views.explain_breaks(no_claim))

# %% [markdown]
# The silent losses are gone, and the silent mismatches fell from 133 to 3. Double charges took
# their place: 447 of them. Every retry, every copy and every retried PUT of an order now charges
# again. One fix moved the break; it did not remove it.
# That is why you run the check again after every change. *Try it*, below, takes the check's
# advice one step further.

# %% [markdown]
# ## Explore
#
# Pick a handler and one of its five smallest breaks, and replay it. You see the schedule, each
# boundary crossed, the effects against the clean run, and the invocations on the clock. The
# choice `try it` is the handler of *Try it*, below: pick it after your prediction. The
# workbook's patterns are here too, each with its books named. A handler is checked the first
# time you pick it; the more calls it makes, the longer that takes.

# %%
handlers = views.HandlerChoices(
    {"given handler": report, "no claim": no_claim, "try it": "keyed:lambda_handler"},
    effects=BOOKS, retries=(1,))

# %% tags=["nbval-ignore-output"]
views.check_explorer(handlers)

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.explore_check(handlers, "given handler", 0)

# %% [markdown]
# This is the break `money.explain()` showed first, now with the books counted. Neither effect
# happened, and the failure queue is empty: nobody will ever hear of this upload.

# %% [markdown]
# ## When a queue feeds the handler
#
# Many teams put an SQS queue between S3 and the function. An **event source mapping**, Lambda's
# own reader of a queue, polls the
# queue and calls the function with a batch of messages, each holding one S3 event. Three things
# change:
#
# - If the function raises, every message of the batch comes back, the ones it charged too. With
#   `ReportBatchItemFailures` on, it can instead return a **batchItemFailures** list,
#   `{"batchItemFailures": [{"itemIdentifier": messageId}]}`, and only those come back.
# - A message comes back after the queue's **visibility timeout**, the time a received message
#   stays hidden from other readers, not after Lambda's retry delays. AWS advises at least six
#   times the function's timeout. The check draws it from the function's timeout (30 s) to 12
#   hours, each end a schedule of its own. A standard queue may also deliver a message twice,
#   even while the first copy is being worked on.
# - After `maxReceiveCount` receives, the queue moves the message to its dead-letter queue. That
#   queue, not Lambda's failure queue, is where a failure shows.
#
# `trigger="sqs"` checks a handler that way (`--trigger sqs` on the command line). Each schedule
# puts two orders in one batch, and judges each order's money on its own. Two schedules add the
# uploader's retried PUT of the first order: S3 notifies each PUT, so its new version is one more
# message, after the first order's message is done or in the same batch. It is the same order, so
# it must add no charge. `retries=(1,)` now means two receives per message. Here are two
# handlers. Both read the order as the given handler does, and name the order and its file in the
# charge's reference (the check finds each charge's order by the file's name). One reports its
# failed messages, one lets an error fail the whole batch.

# %%
# %%writefile scratch/sqs_reports.py
"""Charge each message's order with a key, book the batch, report the messages that failed."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

dynamodb = boto3.client("dynamodb")
s3_client = boto3.client("s3")


def make_provider():
    """Your payment provider's client. The check replaces it with the workbook's stand-in."""
    raise RuntimeError("no provider configured")


def order_of(s3):
    """The order, read as the given handler reads it: the order file at this very upload."""
    bucket, name, obj = s3["bucket"]["name"], unquote_plus(s3["object"]["key"]), s3["object"]
    exact = (
        {"VersionId": obj["versionId"]} if "versionId" in obj else {"IfMatch": f'"{obj["eTag"]}"'}
    )
    body = s3_client.get_object(Bucket=bucket, Key=name, **exact)["Body"].read()
    return f"{bucket}/{json.loads(body)['order_id']}", f"s3://{bucket}/{name}"


def lambda_handler(event, context):
    provider, lines, failed = make_provider(), {}, []
    for message in event["Records"]:
        try:
            for record in json.loads(message["body"])["Records"]:
                order, file = order_of(record["s3"])
                # the order: a retried PUT names it again
                key = hashlib.sha256(order.encode()).hexdigest()
                charge = provider.charge(customer="acme", amount=500, currency="usd",
                                         reference=f"{order} ({file})", idempotency_key=key)
                lines[key] = {
                    "PutRequest": {"Item": {"pk": {"S": key}, "charge_id": {"S": charge.id}}}
                }
        except Exception as error:
            if getattr(error, "http_status", None) != 402:  # a decline is final: nothing to retry
                failed.append({"itemIdentifier": message["messageId"]})
    books = list(lines.values())  # one line per order (a copy in the same batch adds none)
    for start in range(0, len(books), 25):  # BatchWriteItem: at most 25 puts a call
        written = dynamodb.batch_write_item(
            RequestItems={os.environ["LEDGER_TABLE"]: books[start : start + 25]}
        )
        if written["UnprocessedItems"]:
            raise RuntimeError("some lines were not written: the whole batch comes back")
    return {"batchItemFailures": failed}

# %%
# %%writefile scratch/sqs_raises.py
"""Charge each message's order, book the batch, and let any error fail the whole batch."""
import json
import os
from urllib.parse import unquote_plus

import boto3

dynamodb = boto3.client("dynamodb")
s3_client = boto3.client("s3")


def make_provider():
    """Your payment provider's client. The check replaces it with the workbook's stand-in."""
    raise RuntimeError("no provider configured")


def lambda_handler(event, context):
    provider, lines = make_provider(), []
    for message in event["Records"]:
        for record in json.loads(message["body"])["Records"]:
            s3 = record["s3"]
            bucket, name, obj = (
                s3["bucket"]["name"],
                unquote_plus(s3["object"]["key"]),
                s3["object"],
            )
            exact = (
                {"VersionId": obj["versionId"]}
                if "versionId" in obj
                else {"IfMatch": f'"{obj["eTag"]}"'}
            )
            body = s3_client.get_object(Bucket=bucket, Key=name, **exact)["Body"].read()
            order = f"{bucket}/{json.loads(body)['order_id']}"
            charge = provider.charge(customer="acme", amount=500, currency="usd",
                                     reference=f"{order} (s3://{bucket}/{name})")
            lines.append(
                {"PutRequest": {"Item": {"pk": {"S": order}, "charge_id": {"S": charge.id}}}}
            )
    dynamodb.batch_write_item(RequestItems={os.environ["LEDGER_TABLE"]: lines})
    return {"batchItemFailures": []}

# %%
reports = check_handler("sqs_reports:lambda_handler", trigger="sqs", retries=(1,), workers=1)
with views.folded_output():
    print(views.explain_breaks(reports))

# %%
raises = check_handler("sqs_raises:lambda_handler", trigger="sqs", retries=(1,), workers=1)
with views.folded_output():
    print(views.explain_breaks(raises))

# %% [markdown]
# The first handler survives every fault and every copy within a day. A message that failed
# comes back alone, and its key replays any charge it made. The key is made from the order, so
# the retried PUT's message replays it too; a key made from the upload (`?versionId=`) would charge
# that order twice. It breaks only where the order comes again a day or more later: a message
# moved back from the dead-letter queue, or the same order uploaded again. Its key is right, but
# Stripe may have forgotten it: it can prune a key once it is 24 hours old, the key window. It writes its books 25 lines a call,
# one line per key: `BatchWriteItem` refuses more
# than 25 puts, or two puts of one key, in one call
# ([BatchWriteItem](https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html)).
# It also raises when DynamoDB answers with `UnprocessedItems`, the puts it did not write.
#
# The second has no key, and any error fails the whole batch. The batch comes back a visibility
# timeout later, and the uploads it had charged are charged again. Its 11 silent mismatches have
# two causes. It never reads `UnprocessedItems`: when DynamoDB answers its batch write with every
# item unprocessed, the books are never written and nothing fails (4 schedules). And its book
# line's `pk` is the bucket and order id, without the account: another account's order "1001",
# in another batch, replaces the first's line (7 schedules, family `accounts`). Where both sit in
# one batch, DynamoDB refuses the two puts of one key, and the whole batch fails and comes back:
# a double charge, not a silent one. The check's local DynamoDB refuses them as DynamoDB does.
# The check reads the
# dead-letter queue as the failure queue: a message there is a failure a person will see.

# %% [markdown]
# ## Handlers that charge nobody
#
# Most S3-triggered functions charge nobody. They load a file into a table, send a message, or
# start a job. The check runs them too. You name each effect that must happen once, and the
# report then speaks of effects only: no charges, no books.
#
# Such a function usually ships with a SAM template: the function, its trigger, and the
# resources it uses. Each resource has a **logical id** there, its name under `Resources:`. Give
# the check the template and the function's logical id. It reads the function's handler,
# environment, memory and trigger from the template, and where a failed event goes: its
# `DeadLetterQueue` or `OnFailure` destination. Without one, Lambda discards an event that fails
# every attempt, and the check counts it lost, not failed visibly. It creates the template's tables, queues,
# topics and buckets on its local AWS before the clean run. Each gets the name the template
# gives it, or, without one, the stack's name and its logical id.
#
# Here is a job starter, written the way many samples write it. Each uploaded document gets an
# item in a jobs table, for workers to pick up. Its folder, `notebooks/examples/job_starter/`,
# holds `template.yaml` and `src/app.py`. The next cell copies it into the scratch folder twice:
# once to check as it is, once to fix. Here is its handler, read from the copy:

# %%
import json
import os
import subprocess

import idem
from idem.explore.target.template_function import read

EXAMPLES = Path(idem.__file__).resolve().parent.parent / "notebooks" / "examples"
for name in ("job_starter", "job_keyed"):  # as it is, and a copy to fix below
    shutil.copytree(EXAMPLES / "job_starter", SCRATCH / name)
views.show_text((SCRATCH / "job_starter" / "src" / "app.py").read_text(), "python")

# %% [markdown]
# Each run of the handler makes a new job id, `uuid1()`. The item holds the document's address,
# a status, a time and a client token. Its template:

# %%
views.show_text((SCRATCH / "job_starter" / "template.yaml").read_text(), "yaml")

# %% [markdown]
# This is what the check reads from it. The handler is `Handler` in the folder `CodeUri`. The
# environment is the function's `Variables`, each `!Ref` replaced by the name of the resource it
# points at. The check calls its stack `idem-check`, and its account is moto's, 123456789012:

# %%
function = read("scratch/job_starter/template.yaml", "StartJobFunction")
print("handler:    ", function.target.replace(f"{Path.cwd()}{os.sep}", ""))
print("trigger:    ", function.trigger, f"(memory {function.memory_mb} MB)")
print("environment:", function.env)
for resource in function.resources:
    print(f"creates      {resource['type']} {resource['id']}, named {resource['name']}")

# %% [markdown]
# The Python function `check_handler` takes no template, so this section runs the command line,
# `python -m idem check`, as you would in a terminal. The job item is the effect, written with
# `PutItem`: `--effect dynamodb:PutItem`. As everywhere in this chapter, one retry setting and
# one worker keep each check to a few seconds.

# %%
def idem_check(*options):
    """Run `python -m idem check OPTIONS`, as in a terminal; return its exit code and its report."""
    repository = str(EXAMPLES.parent.parent)  # the child imports the same idem as this notebook
    paths = filter(None, [repository, os.environ.get("PYTHONPATH")])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    command = [sys.executable, "-m", "idem", "check", *options, "--retries", "1", "--workers", "1"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    report = done.stdout.replace(f"{Path.cwd()}{os.sep}", "")  # paths as seen from this folder
    if done.returncode not in (0, 1):  # 2: bad input, 3: the check could not finish
        report += done.stderr
    return done.returncode, report


code, report = idem_check("--template", "scratch/job_starter/template.yaml",
                          "--function", "StartJobFunction", "--effect", "dynamodb:PutItem")
smallest_at = report.index("  schedule:")  # printed in two parts, to keep each short
with views.folded_output():
    print(f"exit code {code}\n{report[:smallest_at].rstrip()}")

# %% [markdown]
# Exit code 1 means it breaks (the codes are listed in *What the check proves*, below). The first
# line counts the schedules of each kind; the bracket after the number of breaks says how many of
# each kind broke. The line `as deployed` is what the check read from the template and ran with:
# the function's settings and where a failed event goes. Its end says what feeds the function:
# here the S3 event `DocumentUploaded` of `DocumentBucket`, for every key and every kind of upload.
# The check ran fewer schedules than it judged. A run asks a few questions:
# which arrivals fail, and whether a failed attempt is retried. A schedule that answers them as
# an earlier run did runs exactly as that run did, so it gets that run's result. Without money,
# the verdicts read in effects:
#
# * `exactly_once`: one job item, as in the clean run.
# * `double_effect`: more job items than in the clean run, so the workers do the job twice.
# * `needs_attention`: the job item is there, and the event is in the failure queue too.
# * `failed_visibly`: no job item, and the event is in the failure queue.
#
# The smallest break:

# %%
with views.folded_output():
    print(report[smallest_at:])

# %% [markdown]
# The put wrote its job, and then the handler's answer to Lambda was lost. Lambda retried, and the
# retry made a new job id. Two items for one upload: two jobs. A lost answer to the put itself is
# not enough: botocore resends the same request, with the same job id, and one item is left. In
# the item, `<bucket>` and `<key1>` stand for the schedule's own bucket and file name, so items
# from different schedules compare. The bug is the id: it
# names the attempt, not the upload.

# %% [markdown]
# ## Name the job after the upload
#
# A retry and a copy of the event carry the same bucket, file name and eTag. So make the job id
# from those three. The uploader's retried PUT sends the same bytes. In a bucket that encrypts
# with S3's own keys, S3's default, a PUT's eTag is the MD5 of the bytes: the same eTag, the same
# job ([one charge per order](../docs/one_charge_per_order.md) says the same of an order). A new file
# at the same name has new bytes, and gets a job of its own. Hash the three into an id of fixed
# length. Under a KMS key, or from a multipart upload, the eTag is no MD5 of the bytes
# ([ETag](https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html)). A retried PUT there gets
# a job of its own, so name the job after what the file says, as the workbook keys an order. The
# handler below changes only how the job id is made. It goes into the second copy:

# %%
# %%writefile scratch/job_keyed/src/app.py
"""Start a processing job for every uploaded document: one job item, keyed by the upload."""
import datetime
import hashlib
import os
import urllib.parse
import uuid

import boto3

dynamodb = boto3.client("dynamodb")
JOBS_TABLE = os.environ["JOBS_TABLE"]


def lambda_handler(event, context):
    started = []
    for record in event["Records"]:
        bucket = record["s3"]["bucket"]["name"]
        key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
        etag = record["s3"]["object"]["eTag"]
        # the upload, not the attempt: a retry, a copy and a retried PUT name the same job
        job_id = hashlib.sha256(f"{bucket}/{key}/{etag}".encode()).hexdigest()
        dynamodb.put_item(
            TableName=JOBS_TABLE,
            Item={
                "job_id": {"S": job_id},
                "client_token": {"S": str(uuid.uuid4())},
                "status": {"S": "SUBMITTED"},
                "document": {"S": f"s3://{bucket}/{key}"},
                "submitted_at": {"S": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            },
        )
        print(f"Started job {job_id} for s3://{bucket}/{key}")
        started.append(job_id)
    return {"statusCode": 200, "jobs": started}

# %%
broke = report[smallest_at:].splitlines()[0].split("schedule: ")[1]  # the smallest break above
code, report = idem_check("--template", "scratch/job_keyed/template.yaml",
                          "--function", "StartJobFunction", "--effect", "dynamodb:PutItem",
                          "--json")
keyed = json.loads(report)
print(f"exit code {code}; holds: {keyed['holds']}; {keyed['schedules']} schedules")
for verdict, n in keyed["verdicts"].items():
    print(f"  {verdict:<16}{n:>5}")
same = next(r for r in keyed["results"] if r["schedule"] == broke)
print(f"{broke}:\n  dynamodb:PutItem {same['effects']['dynamodb:PutItem']} (clean run "
      f"{keyed['baseline']['dynamodb:PutItem']}) -> {same['verdict']}")

# %% [markdown]
# With `--json` the check prints its report as data, for a script or CI to read. Exit code 0: it
# holds. Yet the schedule that broke still runs the same way: the handler's answer is lost, and
# the retry puts again. The second put writes the same key. `PutItem` replaces an item with the same
# key ([PutItem](https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html)),
# so one job item is left, as in the clean run.
#
# That is why the check judges a write by the state it leaves, not by its calls. After each
# schedule it reads back the items the named writes touched. It compares them with the clean
# run's items, leaving out fields that differ between two clean runs, such as `submitted_at`
# and `client_token` (the docstring of `idem/explore/judge/state.py` says it in full). A state equal to
# the clean run's is reported with the clean run's count: the `1` above. The same state
# is not a second effect; an item too many is. A message is different. Every `sns:Publish` to
# a standard topic is another message: only a FIFO topic drops a repeat, by its deduplication
# id ([Publish](https://docs.aws.amazon.com/sns/latest/api/API_Publish.html)). So a named message
# is counted, call by call.
#
# One thing the check cannot see here: your workers. A worker may have set the job to `RUNNING`
# before the second put sets it back to `SUBMITTED`, and then a second worker runs it. Add
# `ConditionExpression="attribute_not_exists(job_id)"` to the put, and catch
# `ConditionalCheckFailedException`: a job already started is left alone. A test in this
# repository checks that version too: it holds.

# %% [markdown]
# ## A function from a public sample
#
# AWS publishes many S3-triggered functions as samples, each with its template. The folder
# `notebooks/examples/speech_to_text/` holds one written the way the sample
# `s3-lambda-transcribe-sam` in [aws-samples/serverless-patterns](https://github.com/aws-samples/serverless-patterns)
# is written: our own code, in its shape. Each audio file uploaded starts an Amazon Transcribe
# job. Its handler, copied into the scratch folder:

# %%
shutil.copytree(EXAMPLES / "speech_to_text", SCRATCH / "speech_to_text")
views.show_text((SCRATCH / "speech_to_text" / "src" / "app.py").read_text(), "python")

# %% [markdown]
# The check runs it from its template, unchanged. Its effect is the job it starts:
# `--effect transcribe:StartTranscriptionJob`.

# %%
import textwrap

code, report = idem_check("--template", "scratch/speech_to_text/template.yaml", "--function",
                          "SpeechToTextFunction", "--effect", "transcribe:StartTranscriptionJob")
finding, rest = report.split("\n\n", 1)  # the finding first, then the report as above
print(f"exit code {code}\n{textwrap.fill(finding, 100)}\n")
summary = rest[:rest.index("  schedule:")].splitlines()
print("\n".join(line for line in summary if line.startswith("  ")))

# %% [markdown]
# The breaks have three causes, each a published fact:
#
# * **The key is not decoded.** S3 writes the file's name into its event with a space as `+` and
#   other letters as `%` codes
#   ([event message structure](https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html)).
#   The clean run's name needs no decoding, so it passed. The schedules of the family `names`
#   upload names that do, and `HeadObject` finds no such object. `urllib.parse.unquote_plus(key)`
#   decodes it.
# * **Silent losses and mismatches.** The handler catches every exception and returns a 500. Lambda retries an
#   asynchronous invocation only when the function fails, and a returned 500 is no failure
#   ([error handling](https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)).
#   So a failed call loses the upload, and nothing alerts. A second file at the same name in the
#   same second gets the same job name, which Transcribe refuses: a job name is unique in an account
#   ([StartTranscriptionJob](https://docs.aws.amazon.com/transcribe/latest/APIReference/API_StartTranscriptionJob.html)).
#   That file is lost the same way.
# * **Double effects.** The job name ends with the time. A retry, or a copy of the event a second
#   later, starts a second job for the same file.
#
# The fixes are the ones above: let an error fail the invocation, and name the job after the
# upload. `tests/public/README.md` lists public samples checked this way, from their own templates.

# %% [markdown]
# ## Try it
#
# The check told *no claim* to pass an idempotency key made from the order. The handler below
# does just that, and nothing else: each charge now carries a hash of the order as its key. The
# chapter has not checked it. Predict what the check finds, then run it.

# %%
# %%writefile scratch/keyed.py
"""Charge the customer for each uploaded order with a key made from the order, then write the
charge into the books."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

PRICE_CENTS = 500
dynamodb = boto3.client("dynamodb")
s3_client = boto3.client("s3")


def make_provider():
    """Your payment provider's client (Stripe's, say). Here, the workbook's stand-in."""
    from idem.core.clock import SystemClock
    from idem.core.provider import Provider

    return Provider(dynamodb, os.environ["PROVIDER_TABLE"], SystemClock())


def lambda_handler(event, context):
    table = os.environ["LEDGER_TABLE"]
    provider = make_provider()
    for record in event["Records"]:
        s3 = record["s3"]
        bucket, key, obj = s3["bucket"]["name"], unquote_plus(s3["object"]["key"]), s3["object"]
        # the order file at this very upload: by its version,
        # or (no versioning) while its eTag matches
        exact = (
            {"VersionId": obj["versionId"]}
            if "versionId" in obj
            else {"IfMatch": f'"{obj["eTag"]}"'}
        )
        body = s3_client.get_object(Bucket=bucket, Key=key, **exact)["Body"].read()
        # the order: a retried PUT names it again
        order = f"{bucket}/{json.loads(body)['order_id']}"
        customer = key.split("/")[0]
        provider.charge(customer=customer, amount=PRICE_CENTS, currency="usd", reference=order,
                        idempotency_key=hashlib.sha256(order.encode()).hexdigest())
        dynamodb.update_item(  # the books: one more charge on the customer's account
            TableName=table, Key={"pk": {"S": f"account#{customer}"}},
            UpdateExpression="ADD charges :one, cents :cents",
            ExpressionAttributeValues={":one": {"N": "1"}, ":cents": {"N": str(PRICE_CENTS)}})
    return {"status": "done"}

# %% [markdown]
# Three predictions, each about one schedule the check builds. Replace each `...` and run the
# cell.

# %%
# 1. Within a day of the upload, does any retry or copy of the event charge an order twice?
twice_within_a_day = ...  # True or False
# 2. The first attempt charges and books, then its answer to Lambda is lost; Lambda retries once.
#    What number does the account's `charges` attribute hold at the end?
charges_attribute = ...  # a whole number
# 3. The first attempt charges, then fails before the books, and so does the retry: the event
#    goes to the failure queue. An operator redrives it a day and a second later.
#    Is the order charged a second time?
charged_after_redrive = ...  # True or False

# %% [markdown]
# The check cell runs the check once your predictions are in (a few seconds), and compares.

# %%
print(check_prediction(twice_within_a_day, charges_attribute, charged_after_redrive,
                       run=lambda: handlers.report("try it")))

# %% [markdown]
# <details><summary>Solution</summary>
#
# **1. No.** Every retry and copy sends the same key, so Stripe replays the first charge and no
# money moves again ([Idempotent requests](https://docs.stripe.com/idempotency)).
#
# **2. Two.** The replay answers the retry like the first charge, and the handler carries on to
# its books. The `ADD` runs a second time, with nothing to stop it. The customer paid once, and
# the books say twice: the check calls that a `double_effect`.
#
# **3. Yes.** Stripe may prune a key once it is 24 hours old, and a pruned key makes a new
# request ([Idempotent requests](https://docs.stripe.com/idempotency)). So the redriven event
# charges again. A redrive, a late copy and the uploader's retried PUT can all come after a day.
#
# A handler that holds makes three changes to the given one. Drop the claim that skips: it is
# what strands the work when a step after it fails. Pass a hash of the ORDER as the provider's
# idempotency key: the account, its folder, and the order id (two accounts' order "1001" are two
# orders). Hash it: Stripe takes keys of at most 255 characters. Give the order a record of its
# own that keeps its first attempt's time. An order already booked is skipped however late it
# comes again. One first attempted over 23 hours ago and never booked is not charged blind: it
# fails, so the event waits in the failure queue for a person. And book each charge once: the
# update is conditional on the charge's id not being booked yet, so a retry that replays the
# charge books nothing new. The attribute `booked` is a string set on the account's item. The
# condition `contains(booked, :id)` is true when the set holds the id. `ADD` puts the id in the
# set in the same write. A test in this repository writes this solution out and checks it: it
# holds.
#
# ```python
# import hashlib
# import time
#
#
# def lambda_handler(event, context):
#     table = os.environ["LEDGER_TABLE"]
#     provider = make_provider()
#     for record in event["Records"]:
#         s3 = record["s3"]
#         bucket, key, obj = s3["bucket"]["name"], unquote_plus(s3["object"]["key"]), s3["object"]
#         # the order file at this very upload: by its version, or (no versioning) while its eTag matches
#         exact = {"VersionId": obj["versionId"]} if "versionId" in obj else {"IfMatch": f'"{obj["eTag"]}"'}
#         body = s3_client.get_object(Bucket=bucket, Key=key, **exact)["Body"].read()
#         customer = key.split("/")[0]  # the account: only it uploads under its folder
#         order = f"{bucket}/{customer}/{json.loads(body)['order_id']}"  # a retried PUT names it again
#         # one key per account and order: a retry, and a retried PUT of the same order, replay the first charge
#         idempotency_key = hashlib.sha256(order.encode()).hexdigest()
#         mark, now = {"pk": {"S": f"order#{idempotency_key}"}}, time.time()
#         try:  # the order's record: its first attempt's time, kept by every retry
#             dynamodb.put_item(TableName=table, Item={**mark, "first_attempt_at": {"N": str(now)}},
#                               ConditionExpression="attribute_not_exists(pk)",
#                               ReturnValuesOnConditionCheckFailure="ALL_OLD")
#         except dynamodb.exceptions.ConditionalCheckFailedException as seen:
#             first = seen.response["Item"]
#             if "charge_id" in first:
#                 continue  # booked already: a copy, a retry, or the same order uploaded again
#             if now - float(first["first_attempt_at"]["N"]) > 23 * 3600:  # Stripe may have dropped the key
#                 raise RuntimeError(f"order {order}: first attempted over 23 h ago, never booked: a person must look")
#         charge = provider.charge(customer=customer, amount=PRICE_CENTS, currency="usd",
#                                  reference=order, idempotency_key=idempotency_key)
#         try:  # the books: this charge once, however often this line runs
#             dynamodb.update_item(
#                 TableName=table, Key={"pk": {"S": f"account#{customer}"}},
#                 UpdateExpression="ADD charges :one, cents :cents, booked :charge",
#                 ConditionExpression="NOT contains(booked, :id)",
#                 ExpressionAttributeValues={":one": {"N": "1"}, ":cents": {"N": str(PRICE_CENTS)},
#                                            ":charge": {"SS": [charge.id]}, ":id": {"S": charge.id}})
#         except dynamodb.exceptions.ConditionalCheckFailedException:
#             pass  # booked before: this is a retry whose first answer was lost
#         dynamodb.update_item(TableName=table, Key=mark, UpdateExpression="SET charge_id = :id",
#                              ExpressionAttributeValues={":id": {"S": charge.id}})  # the order: done
#     return {"status": "done"}
# ```
#
# Booking only when `charge.replayed` is false looks tempting, and breaks: the first attempt may
# have charged and died before its books. The `booked` set grows with every charge; for a busy
# account, book each charge as an item of its own, as the keyed handler does. That handler,
# `idem/core/handlers/keyed.py`, is the other answer: a claim with a lease, the same key, and a
# commit only its owner can make. To check your own version, write it to `scratch/keyed.py`, run
# that cell, and pick `try it` in the explorer.
# </details>
#
# Keyed's three steps for one order, as the handler to copy ships them (chapter 06 built them):

# %%
views.show_source(KeyedCharger.charge_once)

# %% [markdown]
# ## What the check proves, and what it cannot
#
# A `holds` means: in every schedule the check built, each upload was charged as often as in
# the clean run, its books agreed, and each named effect happened as often (a named write: it left
# the clean run's state). Where they did not,
# the failure queue held the event. A holds is strong evidence, not a proof. The check cannot:
#
# * see a path the clean run never took, such as an error branch no fault reaches;
# * try every mix: overwrite and slow schedules carry no fault, one call at a time is slow, it
#   is slow for one length only, and no more than two uploads share a name;
# * tell two uploads' books apart: in an overwrite schedule, lines are weighed against the
#   charges of both together;
# * race two invocations at the same instant: its runtime runs one step at a time, and a copy
#   starts only at a boundary;
# * know your bucket: its overwrite schedules try a versioned bucket and an unversioned one, each
#   named in the schedule; every other schedule runs in a versioned bucket. It encrypts with S3's
#   own keys unless a template says a KMS key;
# * see an uploader that writes each name once (`If-None-Match`): its buckets take every PUT;
# * see what other programs do with what the handler wrote, such as a worker that took a job;
# * see clocks that disagree between machines, or DynamoDB's TTL deleting a record at any moment
#   but where a schedule moves the clock on by hours or days;
# * judge books it cannot find, or a provider whose rules differ from the stand-in's (Stripe's).

# %% [markdown]
# ### On the command line and in CI
#
# On the command line, `python -m idem check my_function.py:lambda_handler --effect
# dynamodb:UpdateItem` runs the same check (installed, `idem check`). The job starter above was
# checked this way, from its template. In CI it answers with an
# exit code:
#
# | code | means |
# | --- | --- |
# | 0 | holds |
# | 1 | breaks: the smallest break is printed as a timeline |
# | 2 | bad input: the handler cannot load, be called or be given what it needs (a setting it reads: `--env`); it charges nothing and names no `--effect`; or an `--effect` never happens |
# | 3 | the check could not finish: the handler hangs, exits the process, or escapes the check (calls the internet, starts a subprocess, leaves a thread running) |
#
# A handler's own error (a syntax error, a failed import) is shown with its own traceback, then
# one line. `--json` prints JSON in every case. In a pytest suite, the `idem_check` fixture runs
# the check and fails the test with the smallest break. The fixture comes with the package (a
# pytest plugin). The distribution is named `charged-twice`, and it is not on PyPI: install it
# from a clone of this repository, `pip install '.[check]'` in its root, and the fixture is there.
#
# ```python
# def test_my_handler_charges_once(idem_check):
#     idem_check("my_function.py:lambda_handler", effects=["sqs:SendMessage"])
# ```

# %% [markdown]
# ## Summary
#
# * `check_handler` runs your handler, unchanged, through every schedule of faults, copies and
#   retries, at the calls it makes, then through two uploads of one name and slow calls.
# * It counts the charge; name every other effect, such as the books, or a silent mismatch looks
#   like success.
# * Each break has a cause: a double charge needs the provider's key, a silent mismatch books
#   that can be lost after the charge, a silent loss a claim that stands down forever.
# * A handler that charges nobody can be checked from its SAM template, its effects named. A write is
#   judged by the state it leaves, so a key made from the upload makes a repeated put
#   harmless. A message is counted: each one sent is another.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [12 What to ship](12_what_to_ship.ipynb): the handler to copy, the checklist, and
# the patterns side by side.
