# %% [markdown]
# # 10 Run it in production
#
# What does the production profile add so that no order is lost without someone being told?
#
# **After this chapter you can deploy the production stack, say who its alarms reach, and answer
# each alarm with a command.**
#
# The previous chapter deployed the demo, made to be deleted. The production profile is the
# template's default. It keeps its books, pays through Stripe, and waits out a provider outage.
# This chapter reads what it adds, in the order an operator meets it: the settings, the queue in
# front of the function, the first deploy, the alarms, the runbook, the bill and the deploy
# workflow.

# %% [markdown]
# ## Setup
#
# The template, the production profile's numbers read from it, and the price list.

# %%
from idem import views
from idem.deploy import prices
from idem.lessons.shipping import production, stack_tour

print(views.ship.production_summary())

# %% [markdown]
# ## The settings
#
# Each parameter below is production's own, with its default. The demo's three knobs reach nothing
# here.

# %%
print(views.ship.production_settings(part=0, parts=2))

# %%
print(views.ship.production_settings(part=1, parts=2))

# %% [markdown]
# ## A queue in front of the function
#
# In the demo, S3 invokes the function asynchronously. Lambda retries twice in about three minutes,
# then sends the event to the failure queue. A Stripe incident of twenty minutes would move every
# order in it there, to wait for a person.
#
# In production, S3 sends each upload's event to an SQS queue, `UploadQueue`, and Lambda reads the
# queue for the function. Lambda's reader of a queue is an event source mapping: it polls the
# queue and calls the function with a batch of up to ten records. The function answers with
# a **batchItemFailures** list, the records it could not finish. Lambda deletes the others from the queue.
# A failed record stays hidden for the queue's **visibility timeout**, then comes back. The
# queue's redrive policy sets how many receives a record gets, `maxReceiveCount`. After the last
# one fails, SQS moves the record to the failure queue.

# %%
views.show_text(stack_tour.resources("UploadQueue", "ChargeFunctionUploads"), "yaml")

# %% [markdown]
# The conditions and `RetainedReady` are chapter 09's: both resources exist only in production,
# and the queue outlives a deleted stack (`Retain`), to be adopted by the next one.
#
# The picture, in production: an upload waits in the queue until the function has charged it, or
# until its tries run out.
#
# ```mermaid
# flowchart LR
#     B[(UploadBucket)] -- "ObjectCreated" --> UQ[[UploadQueue<br/>kept 14 days]]
#     UQ -- "batches of 10, at most ReservedConcurrency copies" --> F[ChargeFunction]
#     F -- "batchItemFailures: back after the visibility timeout" --> UQ
#     UQ -. "maxReceiveCount receives" .-> Q[[FailureQueue]]
#     F -- "charge, with key" --> S[(Stripe)]
#     Q -. "alarms" .-> T[[AlarmTopic: your email]]
# ```
#
# What those numbers add up to, read from the template by this code:

# %%
views.show_source(production.upload_queue_numbers)

# %%
print(production.outage_lines())

# %% [markdown]
# Notice the two clocks. The first receive is the first try, so 75 tries span 74 waits. The
# retries last hours, so an outage of an afternoon costs nothing but time: the uploads charge when
# Stripe answers again. The queue keeps a message for days, so the
# failure queue still holds what a longer outage left, until someone redrives it.
#
# Concurrency is capped for the same reason. Stripe allows 25 requests per second to one endpoint,
# such as `POST /v1/payment_intents`, and 100 in all in live mode
# ([rate limits](https://docs.stripe.com/rate-limits)). Each copy of the function makes one charge
# call at a time, so the cap holds only while a call takes as long as the line above says. That is
# an assumption about Stripe's latency, not a promise. A faster Stripe can pass the limit: it then
# answers 429, the handler releases its claim, and the record comes back from the queue with the
# same key.
#
# Slide the outage's length and see where an order uploaded in its first second ends, in each
# profile.

# %% tags=["nbval-ignore-output"]
views.ship.outage_explorer()

# %% [markdown]
# The same call with the widget's starting value:

# %%
_ = views.ship.outage_explore(2.0)

# %% [markdown]
# `python -m idem outage` runs this on the virtual clock: a six-hour outage under steady uploads,
# once through the queue and once through S3's direct invocation, and counts the orders charged,
# lost and charged twice.

# %% [markdown]
# ## The first deploy
#
# ### Stripe in test mode first
#
# Try the production profile with a *test* key (`rk_test_...`) first: test mode moves no
# real money, and its objects never mix with live ones ([Stripe](https://docs.stripe.com/test-mode)).
# Deploy it with `Stage=staging`: at cold start the function refuses a test key where `STAGE` is
# `prod`, and a live key anywhere else. Add `ReservedConcurrency=2`: test mode allows 25 requests a
# second in all, not 100, and each upload makes two.
#
# Make the key a restricted one with PaymentIntents write and read, and Customers read: what the
# function calls, and nothing more. Add Refunds write if you will run `idem refund`, which reads
# the same key. The key goes into Parameter Store as a SecureString, never into the template, the
# environment or a log line. The function reads it at cold start, by the name in
# `StripeSecretParameter`.
#
# ### The account's concurrency
#
# Production reserves `ReservedConcurrency` copies for the charge function. Its reserved
# concurrency is a number of copies no other function can take, and that it cannot exceed.
# Lambda keeps 100 of the account's concurrency unreserved
# ([concurrency](https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html)).
# So the account needs the limit printed above. A new account may have far less:
# `aws lambda get-account-settings` shows it as `ConcurrentExecutions`. If it is lower, ask for
# more through Service Quotas before you deploy; otherwise the deploy fails.
#
# ### Store the key, deploy, upload an order
#
# `read -s` asks for the key without showing it, and the file keeps it out of your shell history:
#
# ```
# aws lambda get-account-settings --query AccountLimit.ConcurrentExecutions
# read -rs KEY && printf '%s' "$KEY" > stripe-key.txt && unset KEY
# aws ssm put-parameter --name /idem/stripe/secret-key --type SecureString --value file://stripe-key.txt
# rm stripe-key.txt
# sam build && sam deploy --config-env prod --parameter-overrides Profile=prod Stage=staging ReservedConcurrency=2 AlarmEmail=you@example.com
# python -m idem customers link alice cus_... --reason "staging rehearsal" --stack idem-prod --yes
# aws s3 cp order.json s3://idem-prod-uploads-ACCOUNT-REGION/alice/order.json
# sam logs --stack-name idem-prod --name ChargeFunction --tail
# ```
#
# Without `AlarmEmail`, or `AlarmTopicArn` naming an SNS topic you already have, CloudFormation
# refuses the stack before it creates anything: its alarms would reach nobody. AWS then mails the
# address a link to confirm the subscription. Until you click it, no alarm mail arrives.
#
# The order is a JSON file that names the order and its amount:
# `{"order_id": "A-1001", "amount_cents": 1250, "currency": "usd"}`. It does not say who pays. The
# account, the folder `alice/`, is linked first to a test customer (`idem customers link`,
# chapter 03). That customer needs a payment method saved for off-session charges, set as its
# default (chapter 12's step 4); in test mode, a test card does.
#
# Each order becomes one PaymentIntent, Stripe's object for one payment. In Stripe's Dashboard,
# in test mode, it is listed under *Payments* ([testing](https://docs.stripe.com/testing)). Its
# metadata names the stack, the order and its idempotency key. Upload the same file again with
# `aws s3 cp`: that is a new version of the same order, and the Dashboard should still show one
# payment for it. When the rehearsal holds, store the live key over the test one
# (`put-parameter --overwrite`) and deploy again with `Stage=prod`, without `ReservedConcurrency=2`.
#
# The rehearsal's records stay in the ledger, which the stack keeps. Link each account to a live
# customer again. Never reuse a rehearsal's order id for a real order of the same account: its
# record says it was charged, so the real order would not be.
#
# ### Delete and redeploy
#
# `sam delete --config-env prod` deletes the stack and keeps its ledger, queues, buckets and logs,
# under names made from the stack's name. A plain redeploy under that name is refused
# (`... already exists`), rather than starting an empty ledger beside the kept one.
# `AdoptRetained=yes` makes the new stack use them.

# %% [markdown]
# ## The alarms, and who they reach
#
# Each alarm is a CloudWatch alarm that publishes to an SNS topic: a channel that passes each
# message on to its subscribers. The topic is the stack's `AlarmTopic`, mailing your confirmed
# address, or the one `AlarmTopicArn` names. Most fire on a single occurrence in five minutes:
# each may be money that moved. The age alarms wait for the oldest message instead. `Pending`
# fires when an hour has at least 20 charge attempts and more than a fifth of them come back
# pending; `Declined` likewise for declines.
#
# Production has one more function: a **webhook**, a URL Stripe calls with each event it has
# to tell (a pending charge that succeeded or failed, a refund, a dispute). It checks Stripe's
# signature, then books what Stripe decided, once per event. Its own three alarms are the `webhook`
# rows. Each row says what to do:

# %%
print(views.ship.alarms_text())

# %% [markdown]
# The demo has four alarms fewer: it has no `UploadQueue` and no webhook. In production, `AsyncEventsDropped` watches
# only the events `idem redrive` sends, which reach the function as asynchronous invocations.
# Each row names the commands that answer the alarm. `README.md`'s alarm table writes each one in
# full, with its options.

# %% [markdown]
# ## The runbook, in commands
#
# Three commands answer the alarms. Each takes `--region`:
#
# * `python -m idem redrive --queue-url URL --function NAME:live --region R` sends each event of a
#   failure queue back to the function's alias `live`, as it was. The order's key, or keyed's look-up
#   for an event older than Stripe's key window, keeps it from charging twice. Name the alias: the
#   function's retries and failure queue (its `EventInvokeConfig`) are set on `live` only, so an event
#   sent to the plain NAME that fails again is discarded, not queued again.
# * `python -m idem settle --key KEY --stack S` looks an order's charge up at Stripe by its
#   idempotency key. Then it books the charge in the ledger, or releases the record for a retry.
#   `--charge pi_...` finds the order from a PaymentIntent's metadata instead.
# * `python -m idem refund --charge pi_... --stack S` refunds one charge, usually an order's second.
#   It sends its own idempotency key, and books the refund in the ledger.
#
# Each shows what it would do and asks `do it? type yes:` at a terminal; `--yes` skips the question,
# for scripts. Anywhere else, without `--yes`, it only prints the plan: a dry run. Acting needs a
# `--reason`, which the ledger keeps beside who ran it.
#
# Two outcomes are Stripe's answer, not a fault. A decline is final for its key: the handler
# records it with its decline code, counts it in the `declined` metric, and never retries the card.
# Some codes say a later attempt may pass ([decline codes](https://docs.stripe.com/declines/codes)):
# that is a new order, with a new key, for a person to start. A charge left
# `processing` (a bank debit, say) can still fail. It is booked `pending` and counted. The webhook
# books it once Stripe has decided; `idem settle` does the same by hand.
#
# ## The reconciliation, three ways
#
# Chapter 09 ran the reconciliation on the demo. Production's compares the same three lists per
# window: the uploads in the bucket, the ledger lines, and this stack's charges at Stripe, found
# by their `idem_stack` metadata. An upload that never produced a line or a charge, a lost event or
# a filter mistake, shows only in the first list. Each finding comes with the command that settles
# it. It finds:
#
# * an upload with no line, a line with no charge, and a charge with no line;
# * a line and a charge that disagree on the amount, and two charges for one order;
# * an upload whose record waits for a person;
# * a charge still `pending` when its window is judged: Stripe has not decided yet, and
#   `idem settle --key KEY` books it once Stripe has. Stripe retries an event for up to three
#   days ([webhooks](https://docs.stripe.com/webhooks#retries)), so the webhook may never hear.
#   A record still `pending` three days after its charge is looked up at Stripe in every later
#   window, and found again each time once Stripe has decided, until `idem settle` books or
#   releases it;
# * a line whose account does not map to the customer Stripe charged: the money came from the
#   wrong person, and `idem refund` returns it;
# * a refund at Stripe that the ledger does not book, say one made in the Dashboard. After a person
#   confirms it was meant, `idem refund --charge pi_...` books what Stripe refunded and refunds
#   nothing more. Its count is the `UnbookedRefunds` metric.
#
# It judges a window only once its uploads' tries are over, about 7.75 hours after it closes. It
# reads the ledger by a Query on an index by day, never a Scan, and resumes each run from a stored
# cursor.
#
# It lists the uploads from the bucket, 1,000 versions a request, as long as the bucket holds no
# more than 200,000. The bucket only grows, since current versions never expire. So the first run
# that finds more marks its cursor, and every run after reads S3's daily inventory of the bucket
# instead ([S3 Inventory](https://docs.aws.amazon.com/AmazonS3/latest/userguide/configure-inventory.html)).
# A window is then judged only once an inventory made after it exists: the reports come a day or
# more late, and the template delivers that inventory into the report bucket.

# %% [markdown]
# ## What production costs
#
# US East list prices before free tiers, each cited in `idem/deploy/prices.py`. Several are
# third-party quotes of AWS's pages, marked so there. The usage behind each line is named in it.
# First, a month with no uploads:

# %%
print("\n".join(prices.table(prices.at_rest())))

# %% [markdown]
# Not in that table: the stack's own metrics. The handler prints one per outcome, and the
# reconciliation prints one per number of its report every hour, uploads or not: the differences,
# the findings by kind, and the uploads, lines and charges it counted.

# %%
print(views.ship.stack_metrics())

# %% [markdown]
# Then what a million uploads add. Two costs are left out: Stripe's own fees, and `UploadQueue`'s
# SQS requests. Those are a send per upload, receives and deletes in batches of ten, and Lambda's
# polling of the queue, which goes on while it is empty, at rest too.

# %%
print("\n".join(prices.table(prices.per_million_uploads())))

# %% [markdown]
# ## Deploys that someone approved
#
# `.github/workflows/deploy.yml` is an example for your account. It runs only from `main`: the tests,
# then `sam deploy` of the demo, then a production change set (chapter 09): the list of what a
# deploy would add, change and delete. It is made with `sam deploy --no-execute-changeset`
# and printed in the run's summary. The `prod` job runs in a GitHub environment with required reviewers. It waits
# for a person to approve, then executes exactly that change set. It assumes an AWS role through
# GitHub's OIDC provider, so no key is stored, and every action is pinned by its commit.
#
# Its production overrides leave `Stage` at the template's default, `prod`, which refuses a test
# key. So set the workflow up once the live key is stored, or add `Stage=staging` to its overrides
# while you rehearse.
#
# Nothing in this chapter ran on AWS: every number above is read from the template or computed.
# The production profile's first real run is yours, in test mode.

# %% [markdown]
# ## Try it
#
# Your Stripe account once went down for 12 hours. Size `UploadQueue` for that: an upload that
# arrived in the outage's first second must still be in the queue, and tried, when Stripe answers
# again. Keep `VisibilityTimeout` as it is. What is the smallest `maxReceiveCount` that does it?

# %%
my_receives = None  # your answer: a whole number

# %%
print(production.check_receive_count(my_receives))

# %% [markdown]
# <details><summary>Solution</summary>
#
# `my_receives = 121`. A try comes every 360 s, and the first comes at once, so N tries reach
# (N - 1) × 360 s. Twelve hours are 43,200 s, or 120 waits, so 121 tries. With 120, the last try
# comes at 11.9 hours and fails; at 12 hours the queue moves the upload to the failure queue.
# Retention is how long a message may wait in all, not how often it is tried: 14 days covers it.
# </details>
#
# ## Summary
#
# * Production puts `UploadQueue` between S3 and the function: an upload is retried for hours
#   through a provider outage, and concurrency is capped to Stripe's rate limit.
# * Its alarms must reach someone: the stack refuses to deploy without an address, and each alarm
#   names a command: `idem redrive`, `idem settle`, `idem refund`.
# * It costs a little at rest and per upload, computed above, and a person approves each
#   production change set before it runs.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [11 Check your own handler](11_check_your_own_handler.ipynb)
