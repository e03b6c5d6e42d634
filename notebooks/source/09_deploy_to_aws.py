# %% [markdown]
# # 09 Deploy to AWS
#
# How do you ship the handler with `template.yaml`, and what does a rehearsal on moto prove?
#
# **After this chapter you can read `template.yaml`, rehearse its deploy offline, and run it on your
# own AWS account.**
#
# Every chapter so far ran the handlers against moto, in this process. The function that Lambda
# would run is the same code. The demo runs `idem.core.entry.lambda_handler`, which reads its mode
# and table names from its environment. Production runs the handler to copy,
# `idem.core.handlers.keyed.lambda_handler`. This chapter ships both.
#
# `template.yaml` describes every resource the function needs. **CloudFormation**, AWS's service
# that builds resources from such a template, creates them together
# as a **stack**: one named set of resources, created, updated and deleted as a unit. The template
# has two profiles. The production profile, its default, is the stack to run payments on. The demo
# profile is this chapter's stack, made to be deleted. The chapter first deploys the demo on moto,
# which runs below and needs no account. Then, only if you opt in, it deploys it on AWS.

# %% [markdown]
# ## Setup
#
# The deploy tool, the template, and a switch that stays off unless you set the environment
# variable `IDEM_REAL_AWS=1` before starting Jupyter. The workbook's own test runs never set it,
# and neither does Binder, the free service that runs these chapters in a browser.
#
# `template.yaml` is written for AWS SAM, a shorthand over CloudFormation. Its **SAM transform**
# expands each shorthand resource (a function with its event, for one) into the plain
# CloudFormation resources it stands for. AWS runs that transform when you deploy. Here the
# `aws-sam-translator` package runs it locally, so the counts below are of plain resources.

# %%
import os

from idem import views
from idem.core import reconcile_job
from idem.core.handlers import keyed
from idem.core.ledger import Ledger
from idem.deploy import calls, flow, lab, package, prices
from idem.deploy import template as tp
from idem.deploy.moto_target import MotoDeployment

REAL_AWS = os.environ.get("IDEM_REAL_AWS") == "1"
sam = tp.load()
profiles = {name: tp.resolve(views.ship.expanded_template(), {"Profile": name}) for name in tp.PROFILES}
print(f"template.yaml: {len(sam['Parameters'])} parameters, "
      + ", ".join(f"{len(cfn['Resources'])} resources in {name}" for name, cfn in profiles.items())
      + f" after the SAM transform; real AWS cells {'ON' if REAL_AWS else 'off'}")

# %% [markdown]
# ## The picture
#
# Five moving parts, as in the article, plus the role that ties them together. Solid arrows are
# what happens on an upload. The dotted ones are what the role allows. Around them, both profiles
# have an hourly reconciliation and alarms that mail a topic. Each function also writes to its own
# log group, left out of the picture.
#
# ```mermaid
# flowchart LR
#     U([you: put_object]) --> B[(UploadBucket<br/>versioned)]
#     B -- "ObjectCreated, async" --> F[ChargeFunction<br/>prod: keyed.lambda_handler<br/>demo: entry.lambda_handler]
#     F -- "claim, commit" --> L[(LedgerTable<br/>TTL expires_at)]
#     F -- "charge, with key" --> P[(ProviderTable, demo<br/>Stripe, prod)]
#     F -. "retries used up" .-> Q[[FailureQueue]]
#     R{{ChargeFunctionRole}} -.- F
#     C[ReconcileFunction<br/>every hour] -- "ledger lines vs charges" --> S[(ReportBucket)]
#     A[alarms] --> T[[AlarmTopic: email]]
# ```

# %% [markdown]
# ## Two profiles, one template
#
# The `Profile` parameter picks one. A template's *conditions* are named true-or-false values
# made from its parameters (`IsProd` is `Profile` equal to `prod`). A setting written
# `!If [IsProd, A, B]` is `A` in production and `B` in the demo. When `B` is `!Ref AWS::NoValue`,
# the demo leaves the setting out altogether. The table below resolves both profiles, as CloudFormation would.

# %%
views.ship.profile_table()

# %% [markdown]
# The `handler` column is the one difference in the code: production runs the handler to copy,
# the demo the entry point. A demo that stages a failure runs `idem.demo_failure.lambda_handler`,
# the failure wrapper around that entry point.
#
# Production keeps its books when the stack goes, and it can restore the ledger to any second of
# the last 35 days (PITR, **point-in-time recovery**). It refuses to delete the ledger until someone
# turns the protection off. It has no failure
# wrapper (the demo's code that makes its function fail on purpose, shown below), no stand-in
# table, and no setting of the demo's. The demo deletes everything with it.
# `tests/test_production_profile.py` checks each of these on the production profile.

# %% [markdown]
# ## The template, resource by resource
#
# ### The parameters
#
# The demo's three knobs, each an environment variable of the function. `HandlerMode` picks the
# pattern; `FailurePoint` and `FailTimes` stage the failure that makes Lambda retry. The count
# behind "once" lives in the ledger table (chapter 01 showed why not in memory). In production they
# reach nothing.

# %%
views.show_text("\n".join(tp.section(name) for name in ("Profile", "HandlerMode", "FailurePoint", "FailTimes")),
                "yaml")

# %% [markdown]
# Production has settings of its own, with defaults chosen for payments:

# %%
print(views.ship.production_settings())

# %% [markdown]
# ### The bucket
#
# Versioned, so that each upload has its own `versionId` for the key recipe of chapter 03. Its name
# is built with `!Sub`. Suppose CloudFormation named it and the function's policy referred to it.
# The bucket needs the function for its notification, and the function needs the policy. Each would
# wait on the other. The notification itself is not written here: the SAM `Events` entry on the
# function adds it. Old versions expire after 90 days, and the bucket's policy, the second
# resource below, refuses plain HTTP.

# %%
views.show_text("\n\n".join(tp.section(name) for name in ("UploadBucket", "UploadBucketPolicy")), "yaml")

# %% [markdown]
# ### The two tables and the queue
#
# Both tables bill per request, so an idle table pays nothing for capacity; it still pays for the
# data it stores. Only the ledger has a
# TTL: an unfinished record carries `expires_at`, and DynamoDB deletes it some time after that
# passes. Chapter 07 is why the code checks expiry itself. A done record drops `expires_at`: it is a
# ledger line, kept (chapter 08). The `by_account` index lists those lines by account, for the
# totals. Each `!If [IsProd, ...]` is a setting the two profiles differ in.

# %%
views.show_text(tp.section("LedgerTable"), "yaml")

# %% [markdown]
# The stand-in provider's table exists only in the demo. The queue keeps failure records for 14
# days, longer than any long weekend.

# %%
views.show_text("\n\n".join(tp.section(name) for name in ("ProviderTable", "FailureQueue")), "yaml")

# %% [markdown]
# ### The function
#
# Read the function's YAML with these points in mind:
#
# * `Handler` names the code Lambda calls, one per profile (the three-way `!If` of the table above).
# * The environment hands it the parameters and the tables' real names.
# * `EventInvokeConfig` is the async behaviour the local runtime imitates. Lambda retries twice and
#   keeps an event at most six hours, then sends the invocation record to the queue.
# * One parameter, `MaxEventAgeSeconds`, sets that age and the code's `MAX_EVENT_AGE_SECONDS`. The
#   code refuses to start if a record or a provider key would die sooner (chapter 07).
# * `Timeout` is 30 s here; Lambda's own default is 3 s.
# * Logs are JSON. The handler prints its metric lines in CloudWatch's **Embedded Metric Format**
#   (EMF): JSON lines that CloudWatch turns into metrics, with no API call. Lambda passes printed
#   lines through as they are, so each stays one JSON line that CloudWatch can read.
# * Production reserves concurrency, to bound the calls to Stripe. Stripe allows 25 requests per
#   second to one endpoint, such as `POST /v1/payment_intents`, and 100 in all in live mode
#   ([rate limits](https://docs.stripe.com/rate-limits)). Each copy makes one charge call at a
#   time, so ten copies stay under 25 per second only while each charge, with the work around it,
#   takes at least 0.4 s. Faster ones can pass it: Stripe then answers 429, and the handler
#   releases its claim so that Lambda retries with the same key.
# * The `Events` list names the uploads that are orders, and says why `Copy` is not one.
# * `CodeUri: function/` with `BuildMethod: makefile` is how `sam build` packages only `idem`'s
#   core (more on that below).
# * The runtime is Python 3.12 on arm64, while the workbook's tests run on Python 3.11. The core
#   uses nothing that changed between the two, but run your own tests on 3.12 before you ship.

# %%
views.show_text(tp.section("ChargeFunction"), "yaml")

# %% [markdown]
# ### The role: exactly what the code calls
#
# Least privilege is easy to claim and easy to check. `calls.observed_calls()` runs all four
# patterns with and without failures and duplicates. It uses a boto3 session that notes every
# DynamoDB operation and its table. Next to it: what the role in the template grants.

# %%
views.show_text(tp.section("ChargeFunctionRole"), "yaml")

# %%
views.ship.role_table(flow.parameters("keyed"), tp.granted, calls.observed_calls(),
                      calls.SERVICE_CALLS | calls.TRACING_CALLS)

# %% [markdown]
# Every row is both needed and granted: no `Scan`, no `DeleteItem`, and `*` only for X-Ray, which
# takes no other resource. This is the demo's role. In production the handler also reads the
# Stripe key from **Parameter Store**, the AWS Systems Manager store for settings and secrets, and
# the role says so. The production role may also read an
# upload by its `versionId`. That is for `amount_from_order_file` (chapter 11), once you make it
# your `amount_for`. As shipped, the handler charges the configured price and reads no upload. The
# cost table below assumes you made that change, so it counts one read per upload. Suppose a
# later change made the code call something new. The test
# `test_role_grants_exactly_the_calls_the_function_makes` would then fail until the template
# caught up.

# %% [markdown]
# ## What ships: the core, nothing else
#
# The Lambda package must not carry moto, pandas, the notebooks or the virtualenv. One function
# decides what ships, `idem.deploy.package.core_files`. Both `sam build` (through
# `function/Makefile`) and `python -m idem deploy` use it.
#
# It takes `idem/__init__.py` and `idem/core/`, nothing else. The demo's failure wrapper ships only
# when a demo asks for it (`IDEM_DEMO=1 sam build`, or the deploy tool's own package). Production
# also needs Stripe's SDK, which Lambda's Python runtime does not include. `function/Makefile`
# installs `stripe` (16.1) into the production artifact, built for Lambda's arm64 platform. The
# core as it ships, counted by folder:

# %%
shipped = package.core_files()
print(sorted({path.parent.as_posix() for path in shipped}),
      "| failure wrapper shipped:", any(path.name == package.DEMO_WRAPPER for path in shipped))

# %% [markdown]
# ## The dry run on moto, step by step
#
# `MotoDeployment` does what a deploy does, in order, against moto's CloudFormation. It packages
# and uploads the code, expands the SAM transform locally with aws-sam-translator, and creates the
# stack. The names it prints are the stack's real resource names. The dry run stages a failure:
# `FailurePoint=after_charge` and `FailTimes=once`, so the first attempt fails after its charge.

# %%
dry = MotoDeployment("idem-demo")
_ = dry.package()
_ = dry.deploy("naive")

# %% [markdown]
# moto's CloudFormation quietly drops a few of the template's settings, such as bucket versioning
# and table TTL. The next call sets them on moto, and prints each one. AWS keeps them, so there
# is nothing to fill there. [The appendix](12_appendix_the_local_aws.ipynb#deploy-gaps) explains
# what moto leaves out and how the workbook fills it.

# %%
_ = dry.fill_gaps()  # moto only

# %% [markdown]
# ### The naive function, one upload
#
# An upload into the stack's bucket. moto's S3 fires the notification at the stack's function. moto
# cannot run Lambda code, so the local runtime runs `idem.core.entry` with the *deployed* function's
# environment and event-invoke config. It works against the stack's tables and queue.

# %%
naive_run = dry.upload("alice/order-1.txt")
fig = views.timeline(dry.attempts[naive_run.key], title=naive_run.line())

# %% [markdown]
# The title counts the charges. The provider was paid on the first attempt, which then failed, and
# paid again on the retry a minute later. The ledger, read back from the stack's own table:

# %%
ledger = Ledger(dry.clients["dynamodb"], dry.outputs["LedgerTableName"], dry.clock)
views.compact_items(ledger.items())

# %% [markdown]
# ### Switch the mode, upload a fresh file
#
# A stack update with `HandlerMode=keyed` changes one environment variable of the same function.
# The file name must be new: the failure counter and the idempotency record are per upload. The
# stack's clock runs on from the naive upload, so keyed's first attempt starts at 60 s, not 0.

# %%
_ = dry.deploy("keyed")
_ = dry.fill_gaps()
keyed_run = dry.upload("alice/order-2.txt")
fig = views.timeline(dry.attempts[keyed_run.key], title=keyed_run.line())

# %% [markdown]
# The failed attempt gave its lease back as it failed. So the retry took the work over and called
# the provider with the same key, which replayed the first charge. What the table holds now, one
# short row per item:

# %%
views.compact_items(ledger.items())

# %% [markdown]
# Keyed's record is its ledger line: `done`, with the account, the cents and the charge id. The
# `account#alice` counter is naive's, from the first upload.

# %%
print("failure queue depth:", flow.queue_depth(dry.clients["sqs"], dry.outputs["FailureQueueUrl"]))
views.items_frame([run.row() for run in dry.runs])

# %% [markdown]
# Had an event reached the queue, `python -m idem redrive --queue-url URL --function NAME --region R
# --yes` sends each one back to the function as it was, with its own `eventTime` (chapter 07 shows
# why).

# %% [markdown]
# ### The hourly reconciliation, on this stack
#
# `ReconcileFunction` runs `idem/core/reconcile_job.py` every hour. It takes one closed hour and
# compares the ledger lines booked in it with the charges the provider made in it. Both sides are
# read a little wider: a retry may book a charge up to the maximum event age later. It writes a
# report to the stack's report bucket and prints its numbers as CloudWatch metrics. Here it runs on
# the stack we just used, with the deployed function's own settings:

# %%
views.show_source(reconcile_job.compare)

# %%
report = views.ship.reconcile_on(dry)
print(f"window {report.to_dict()['window']}: {report.ledger_lines} ledger line(s), "
      f"{report.provider_charges} charge(s), {report.differences} difference(s)")
views.items_frame([{"charge": e.charge_id, "account": e.account, "cents": e.cents,
                    "finding": "charged, not on the books"} for e in report.unbooked]
                  + [{"charge": e.charge_id, "account": e.account, "cents": e.cents,
                      "finding": "on the books, not charged"} for e in report.uncharged])

# %% [markdown]
# Naive's two charges have no ledger line with their charge id: its counter says "one charge for
# alice" but names neither. Keyed's one charge matches its line. On AWS this finding fires the
# `ReconcileDifferencesAlarm`, and the report in the bucket lists each charge.

# %% [markdown]
# ### Teardown
#
# A versioned bucket has to be emptied, every version, before CloudFormation can delete it. Then the demo stack goes, and with it the function, tables, queue, role and
# log group. A production stack would keep its ledger, queue, buckets and logs.

# %%
leftovers = dry.teardown()

# %% [markdown]
# `python -m idem deploy` runs all of the above in one go. It exits 0 only if naive charged twice
# and keyed once.

# %% [markdown]
# ## Explore the deployed stack
#
# Pick the template's parameters. Each change deploys a fresh stack on moto, uploads one order,
# shows what the provider charged, and tears the stack down (a couple of seconds each).

# %%
# NBVAL_IGNORE_OUTPUT
lab.stack_explorer()

# %% [markdown]
# The same call with the widget's starting values:

# %%
twin = lab.try_stack("naive", "after_charge", "once")
print(twin.line())
print("\n".join(twin.attempts))

# %% [markdown]
# ## On your AWS account (opt-in)
#
# This part talks to real AWS. It only runs when Jupyter was started with `IDEM_REAL_AWS=1` and
# your AWS credentials and region are configured. It creates a tagged stack and a tagged code
# bucket. It uploads two orders (naive, then keyed) and waits for Lambda's retry, about a minute
# each. Then it reads the ledger and deletes everything it made. It never touches a stack it did
# not tag. It stops with one message if the name is taken or a previous stack is in a failed state.
#
# From a terminal, the same: `python -m idem deploy --target aws --yes --region eu-west-1`. It
# asks for `--yes` and a region, and answers a missing credential or an endpoint that does not
# answer in one line, well within 30 s.
#
# With the SAM CLI, `samconfig.toml` holds the two profiles: `default` is the demo, `prod` the
# production stack. The `default` demo stages no failure (`FailurePoint=none`), so it needs no
# failure wrapper. To stage one, build with the wrapper and say so:
# `IDEM_DEMO=1 sam build`, then `sam deploy --parameter-overrides Profile=demo HandlerMode=keyed
# FailurePoint=after_charge`. A `--parameter-overrides` on the command line replaces the whole
# `parameter_overrides` line of `samconfig.toml`, not one value in it
# ([precedence](https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/serverless-sam-cli-config.html)).
# So repeat every value you keep: without `HandlerMode=keyed`, the template's default, `naive`,
# is deployed. `sam logs` reads a function's logs.
#
# ```
# sam build && sam deploy --guided
# sam logs --stack-name idem-demo --name ChargeFunction --tail
# ```
#
# Cleaning up the demo after SAM takes one step more. The bucket is versioned, and `sam delete`
# fails while any version or **delete marker** is left in it. A delete marker is what deleting
# an object leaves in a versioned bucket: the older versions stay behind it. Empty it first:
#
# ```
# python -m idem deploy --target aws --stack idem-demo --empty-bucket --sam --yes
# sam delete --stack-name idem-demo
# ```
#
# Or let `--delete --sam --yes` do both. The `--sam` flag acts only on a stack whose template
# carries this template's `Metadata` mark and nothing but its resources. It never acts on a
# production stack. For that one, `sam delete --config-env prod` deletes the stack and keeps its
# books, queue, buckets and logs. The kept buckets and log groups keep their names, which the
# template derives from the stack's name. So a new deploy under the same stack name fails until
# you delete them, or deploy under another name.
#
# ### Production with Stripe in test mode
#
# The production profile charges through Stripe. Try it first with a *test* secret key
# (`sk_test_...`): **test mode** moves no real money, and its objects never mix with live ones
# ([Stripe](https://docs.stripe.com/test-mode)). The key goes into Parameter Store as a
# SecureString, never into the template, the environment or a log line. The function reads it at
# cold start, by the name in `StripeSecretParameter`.
#
# Check one account setting first. Production reserves `ReservedConcurrency` (10) for the charge
# function. Its **reserved concurrency** is a number of copies no other function can take, and
# that it cannot exceed. Lambda keeps 100 of the account's concurrency unreserved
# ([concurrency](https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html)).
# So the account needs a concurrency limit of at least 110. A new account may have far less:
# `aws lambda get-account-settings` shows it as `ConcurrentExecutions`. If it is lower, ask for
# more through Service Quotas before you deploy; otherwise the deploy fails.
#
# Then store the key, deploy, and upload an order. `read -s` asks for the key without showing
# it, and the file keeps it out of your shell history and the process list:
#
# ```
# aws lambda get-account-settings --query AccountLimit.ConcurrentExecutions
# read -rs KEY && printf '%s' "$KEY" > stripe-key.txt && unset KEY
# aws ssm put-parameter --name /idem/stripe/secret-key --type SecureString --value file://stripe-key.txt
# rm stripe-key.txt
# sam build && sam deploy --config-env prod --parameter-overrides Profile=prod AlarmEmail=you@example.com
# aws s3 cp order.csv s3://idem-prod-uploads-ACCOUNT-REGION/alice/order.csv
# sam logs --stack-name idem-prod --name ChargeFunction --tail
# ```
#
# AWS then mails the alarm address a link to confirm the subscription. Until you click it, the
# subscription stays pending and no alarm mail arrives.
#
# Each upload becomes one **PaymentIntent**, Stripe's object for one payment, confirmed with
# Stripe's test card `pm_card_visa`. In
# Stripe's Dashboard, in test mode, it is listed under *Payments*
# ([testing](https://docs.stripe.com/testing)). Its metadata names the upload: the account, the
# object and its idempotency key. Upload the same order again with `aws s3 cp`: that is a new
# version, so a new order and a new payment. A copy of one event is another matter. You cannot
# make S3 send one, but when a copy comes, its log line says `duplicate`, and the Dashboard should
# still show one payment for that upload. Check that on your account. Locally, the loopback Stripe
# showed it (`tests/test_handler_standalone.py`).
#
# ### The alarms, and what to do when one fires
#
# Each alarm fires on a single occurrence in five minutes and mails the stack's topic. Each is
# listed with what it means and what to do:

# %%
todo = {
    "FailureQueueDepthAlarm": "fix the cause, then redrive the queue",
    "ChargeErrorsAlarm": "read the logs; Lambda retries twice",
    "ChargeThrottlesAlarm": "raise ReservedConcurrency if Stripe allows",
    "AsyncEventsDroppedAlarm": "check the failure queue received them",
    "DestinationDeliveryFailuresAlarm": "events are lost: reconcile now",
    "NeedsAttentionAlarm": "look the charge up at Stripe, settle it",
    "ReconcileDifferencesAlarm": "open the window's report",
    "ReconcileErrorsAlarm": "read the reconciler's logs",
}
print(views.ship.alarms_text(todo))

# %% [markdown]
# ### What production costs
#
# US East list prices before free tiers, each cited in `idem/deploy/prices.py`. Several are
# third-party quotes of AWS's pages, marked so there. The usage behind each line is an assumption
# named in the line. First, a month with no uploads:

# %%
print("\n".join(prices.table(prices.at_rest())))

# %% [markdown]
# Not in that table: the stack's own metrics. The handler prints one per outcome, and the
# reconciliation prints its numbers every hour, uploads or not. CloudWatch bills each custom
# metric per month, after a free tier:

# %%
print(views.ship.stack_metrics(report))

# %% [markdown]
# Then what a million uploads add. Stripe's own fees are not in it.

# %%
print("\n".join(prices.table(prices.per_million_uploads())))

# %% [markdown]
# ### What real AWS printed: no stored example
#
# Every stored output of this workbook comes from moto. It was built and tested on a machine with no
# network and no AWS account, so no run on real AWS could be captured here. The rehearsal shows that
# the template deploys, that the role grants what the code calls, and that the code charges once. It
# does not show that AWS behaves as moto does: retry timing, TTL deletes and IAM are AWS's own.
# The moto library also dropped five of the template's settings (versioning, the notification,
# TTL and two event-invoke configs). The rehearsal set them by hand, so whether AWS applies them
# is not rehearsed. Since moto enforces no IAM, the role check above compares text, not access.
# And the production profile never ran here: Stripe, Parameter Store, the reserved concurrency,
# the alarms and the hourly reconciliation are yours to see on AWS.
# When you run the next cell on your account, it prints when and where it ran. Keep that output: it
# is the real evidence this copy lacks.

# %%
if REAL_AWS:
    import datetime

    from idem.deploy import aws_target

    session = aws_target.preflight(region=None, yes=True)
    print(f"captured on AWS, region {session.region_name}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    real_runs = aws_target.run(session, "idem-demo", keep=False, wait_seconds=300)
    print(views.items_frame([run.row() for run in real_runs]).to_string(index=False))
else:
    print("skipped: start Jupyter with IDEM_REAL_AWS=1 (and AWS credentials) to run this on AWS")

# %% [markdown]
# If a run was interrupted, delete what it left with
# `python -m idem deploy --target aws --stack idem-demo --delete --yes`. It deletes only a stack
# carrying the `idem:deployed-by` tag, and says so if there is nothing left to delete.

# %%
if REAL_AWS:
    aws_target.delete(session, "idem-demo")
else:
    print("skipped: nothing was created")

# %% [markdown]
# ## Try it
#
# The template's `FailTimes=always` stages a poison event: the function fails after the charge on
# every attempt. Deploy `HandlerMode=keyed` that way, in your head first. Predict three numbers:
# the charges the provider made, the entries in the stack's ledger, and the events that reach the
# stack's failure queue. The check deploys that stack on moto and compares.

# %%
my_prediction = {"charges": None, "ledger entries": None, "events in the failure queue": None}  # your answer

# %%
result = lab.try_stack("keyed", "after_charge", "always")
print(views.ship.check_stack_prediction(my_prediction, result))

# %% [markdown]
# <details><summary>Solution</summary>
#
# One charge, no ledger entry, one event in the failure queue. The key makes every retry a replay,
# so money moves once. No attempt gets to its commit, so the ledger books nothing. The template
# routes the exhausted event to its failure queue, where an alarm and a redrive can act on it. It
# is keyed's poison case from chapter 06, on the deployed stack. The hourly reconciliation reports
# the charge as one not on the books.
# </details>
#
# ## Summary
#
# * You ship the handler as one stack from `template.yaml`: five moving parts and a role that grants
#   exactly the calls the code was seen making.
# * The production profile, the default, keeps the books, hardens the bucket and function, alarms
#   on every way an upload can go wrong, and reconciles every hour. The demo profile is disposable.
# * The rehearsal on moto creates the stack from the real template and fills by hand what moto
#   drops. Because moto cannot run Lambda code, the workbook's runtime runs the function on the
#   stack's tables and queue: naive charges twice, keyed once.
# * It shows that the template's text and the code agree, not that AWS reads the template the same
#   way. No real-AWS run is stored here: the opt-in cells print one, with when and where, on your
#   account.
#
# To ship the pattern in your own function, start from the handler to copy,
# [`idem/core/handlers/keyed.py`](../idem/core/handlers/keyed.py), standard library and boto3, and
# `keyed_stripe.py` beside it if you charge through Stripe (chapter 11); otherwise put your
# provider's client in place of `make_provider()`. Then check your version the
# way the next chapter shows.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [10 Check your own handler](10_check_your_own_handler.ipynb)
