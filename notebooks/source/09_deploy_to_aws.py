# %% [markdown]
# # 09 Deploy to AWS
#
# **After this chapter you can read `template.yaml` resource by resource, rehearse the whole
# deploy offline, and, if you choose to, watch the same code charge twice and then once on your
# own AWS account.**
#
# Every chapter so far ran the handlers against moto, in this process. The function that Lambda
# would run is the same code: `idem.core.entry.lambda_handler`, reading its mode and table names from
# its environment. This chapter ships it. First as a dry run on moto, which is executed below and
# needs no account, then, only if you opt in, for real.

# %% [markdown]
# ## Setup
#
# The deploy tool, the template, and a switch that stays off unless you set the environment
# variable `IDEM_REAL_AWS=1` before starting Jupyter. CI and Binder never set it.

# %%
import os

from idem import views
from idem.deploy import calls, flow, lab, package
from idem.deploy import template as tp
from idem.deploy.moto_target import MotoDeployment
from idem.core.ledger import Ledger

REAL_AWS = os.environ.get("IDEM_REAL_AWS") == "1"
sam = tp.load()
print(f"template.yaml: {len(sam['Resources'])} resources, parameters "
      f"{', '.join(sam['Parameters'])}; real AWS cells {'ON' if REAL_AWS else 'off'}")

# %% [markdown]
# ## The picture
#
# Five moving parts, as in the article, plus the log group and the role that ties them together.
# Solid arrows are what happens on an upload; the dotted ones are what the role allows.
#
# ```mermaid
# flowchart LR
#     U([you: put_object]) --> B[(UploadBucket<br/>versioned)]
#     B -- "ObjectCreated, async" --> F[ChargeFunction<br/>idem.core.entry.lambda_handler]
#     F -- "claim, commit" --> L[(LedgerTable<br/>TTL expires_at)]
#     F -- "charge, with key" --> P[(ProviderTable)]
#     F -. "retries used up" .-> Q[[FailureQueue]]
#     R{{ChargeFunctionRole}} -.- F
# ```

# %% [markdown]
# ## The template, resource by resource
#
# ### The parameters
#
# Three knobs, each an environment variable of the function. `HandlerMode` picks the pattern;
# `FailurePoint` and `FailTimes` stage the failure that makes Lambda retry. The count behind
# "once" lives in the ledger table (chapter 01 showed why not in memory).

# %%
views.show_text("\n".join(tp.section(name) for name in sam["Parameters"]), "yaml")

# %% [markdown]
# ### The bucket
#
# Versioned, so that each upload has its own `versionId` for the key recipe of chapter 03. It
# has a name built with `!Sub`: if CloudFormation named it, and the function's policy referred
# to it, the bucket (which needs the function for its notification) and the function (which
# needs the policy) would wait on each other. The notification itself is not written here:
# the SAM `Events` entry on the function adds it.

# %%
views.show_text(tp.section("UploadBucket"), "yaml")

# %% [markdown]
# ### The two tables and the queue
#
# Both tables bill per request, so an idle stack costs nothing by the hour. Only the ledger has a
# TTL: records carry `expires_at`, and DynamoDB deletes them some time after that passes (chapter
# 07 is why the code checks expiry itself). The queue keeps failure records for 14 days.

# %%
views.show_text("\n\n".join(tp.section(name) for name in ("LedgerTable", "ProviderTable", "FailureQueue")),
                "yaml")

# %% [markdown]
# ### The function
#
# `Handler` names the entry point; the environment hands it the parameters and the tables' real
# names. `EventInvokeConfig` is the async behaviour the local runtime imitates: two retries, events
# kept at most six hours, then the invocation record goes to the queue. `MAX_EVENT_AGE_SECONDS`
# repeats that age for the code, which refuses to start if a record or a provider key would die
# sooner (chapter 07). `Timeout` is 30 s here; Lambda's own default is 3 s. `CodeUri: function/` with
# `BuildMethod: makefile` is how `sam build` packages only `idem`'s core (more on that below).

# %%
views.show_text(tp.section("ChargeFunction"), "yaml")

# %% [markdown]
# ### The role: exactly what the code calls
#
# Least privilege is easy to claim and easy to check. `calls.observed_calls()` runs all four
# patterns with and without failures and duplicates, through a boto3 session that notes every
# DynamoDB operation and its table. A transaction counts item by item, which is how IAM authorises
# it. Next to it: what the role in the template grants.

# %%
views.show_text(tp.section("ChargeFunctionRole"), "yaml")

# %%
cfn = tp.translate(tp.with_code(sam, "code-bucket", "idem-core.zip"))
granted, seen = tp.granted(cfn), calls.observed_calls()
needed = seen | calls.SERVICE_CALLS
views.items_frame([{"pk": f"{action} on {resource}",
                    "code calls it": "yes" if (action, resource) in seen else "Lambda does",
                    "role grants it": "yes" if (action, resource) in granted else "NO"}
                   for action, resource in sorted(granted | needed)], width=60)

# %% [markdown]
# Every row is both needed and granted: no `Scan`, no `DeleteItem`, nothing on S3 (the function
# never reads the object), nothing on `*`. If a later change made the code call something new, the
# test `test_role_grants_exactly_the_calls_the_function_makes` would fail until the template
# caught up.

# %% [markdown]
# ## What ships: the core, nothing else
#
# The Lambda package must not carry moto, pandas, the notebooks or the virtualenv. One function
# decides what ships, and both `sam build` (through `function/Makefile`) and `python -m idem
# deploy` use it:

# %%
views.show_source(package.core_files)

# %%
print(sorted({path.parent.as_posix() for path in package.core_files()}))

# %% [markdown]
# ## The dry run on moto, step by step
#
# `MotoDeployment` does what a deploy does, in order, against moto's CloudFormation: package and
# upload the code, expand the SAM transform locally with aws-sam-translator, create the stack. The
# names it prints are the stack's real resource names.

# %%
dry = MotoDeployment("idem-demo")
_ = dry.package()
_ = dry.deploy("naive")

# %% [markdown]
# moto creates the resources but quietly drops some of their settings. `fill_gaps` reads each
# one from the expanded template, compares it with the deployed resource, and sets what is
# missing with the boto3 call a person would use. On AWS the same check finds all of them present.

# %%
_ = dry.fill_gaps()
views.items_frame([gap.row() for gap in dry.gaps], width=48)

# %% [markdown]
# ### The naive function, one upload
#
# An upload into the stack's bucket. moto's S3 fires the notification at the stack's function; moto
# cannot run Lambda code, so the local runtime runs `idem.core.entry` with the **deployed** function's
# environment and event-invoke config, against the stack's tables and queue.

# %%
naive_run = dry.upload("alice/order-1.txt")
fig = views.timeline(dry.attempts[naive_run.key], title=naive_run.line())

# %% [markdown]
# Two charges for one upload: the provider was paid on the first attempt, which then failed, and
# paid again on the retry a minute later. The ledger, read back from the stack's own table:

# %%
ledger = Ledger(dry.clients["dynamodb"], dry.outputs["LedgerTableName"], dry.clock)
views.items_frame(ledger.items())

# %% [markdown]
# ### Switch the mode, upload a fresh file
#
# A stack update with `HandlerMode=keyed` changes one environment variable of the same function.
# The file name must be new: the failure counter and the idempotency record are per upload.

# %%
_ = dry.deploy("keyed")
_ = dry.fill_gaps()
keyed_run = dry.upload("alice/order-2.txt")
fig = views.timeline(dry.attempts[keyed_run.key], title=keyed_run.line())

# %% [markdown]
# One charge. The failed attempt gave its lease back as it failed, so the retry took the work
# over and called the provider with the same key, which replayed the first charge. The table
# now holds a `done` record next to alice's entry, and the failure queue is empty:

# %%
views.items_frame(ledger.items())

# %%
print("failure queue depth:", flow.queue_depth(dry.clients["sqs"], dry.outputs["FailureQueueUrl"]))
views.items_frame([run.row() for run in dry.runs])

# %% [markdown]
# Had an event reached the queue, `python -m idem redrive --queue-url URL --function NAME` sends
# each one back to the function as it was, with its own `eventTime` (chapter 07 shows why).

# %% [markdown]
# ### Teardown
#
# A versioned bucket has to be emptied, every version, before CloudFormation can delete it. Then
# the stack goes, and with it the function, tables, queue, role and log group.

# %%
leftovers = dry.teardown()

# %% [markdown]
# `python -m idem deploy` runs all of the above in one go and exits 0 only if naive charged twice
# and keyed once.

# %% [markdown]
# ## Explore the deployed stack
#
# Pick the template's parameters; each change deploys a fresh stack on moto, uploads one order,
# shows what the provider charged, and tears it down (a couple of seconds each).

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
# This part talks to real AWS, so it only runs when Jupyter was started with `IDEM_REAL_AWS=1`
# and your AWS credentials and region are configured. It creates a tagged stack and a tagged code
# bucket, uploads two orders (naive, then keyed), waits for Lambda's retry (about a minute each),
# reads the ledger, and deletes everything it made. It never touches a stack it did not tag, and
# stops with one message if the name is taken or a previous stack is in a failed state.
#
# From a terminal, the same: `python -m idem deploy --target aws --yes --region eu-west-1`. Or with
# the SAM CLI: `sam build && sam deploy --guided`. Cleaning up after SAM takes one step more: the
# bucket is versioned, and `sam delete` fails while any version or delete marker is left in it.
# Empty it first with `python -m idem deploy --target aws --stack sam-app --empty-bucket --sam --yes`,
# then run `sam delete --stack-name sam-app`; or let `--delete --sam --yes` do both. `--sam` acts only
# on a stack whose template carries this template's `Metadata` mark and nothing but its resources.

# %%
if REAL_AWS:
    from idem.deploy import aws_target

    session = aws_target.preflight(region=None, yes=True)
    real_runs = aws_target.run(session, "idem-demo", keep=False, wait_seconds=300)
    print(views.items_frame([run.row() for run in real_runs]).to_string(index=False))
else:
    print("skipped: start Jupyter with IDEM_REAL_AWS=1 (and AWS credentials) to run this on AWS")

# %% [markdown]
# If a run was interrupted, delete what it left with
# `python -m idem deploy --target aws --stack idem-demo --delete --yes`; it deletes only a stack
# carrying the `idem:deployed-by` tag, and says so if there is nothing left to delete.

# %%
if REAL_AWS:
    aws_target.delete(session, "idem-demo")
else:
    print("skipped: nothing was created")

# %% [markdown]
# ## Try it
#
# Which `HandlerMode` makes the deployed stack charge exactly once **and** finish its books when
# the function fails after the charge, once? Set `my_mode` and run the check; it deploys a stack on
# moto with your choice.

# %%
my_mode = "naive"  # your answer here: naive, claim_first, robust or keyed

# %%
result = lab.try_stack(my_mode, "after_charge", "once")
if result.charges == 1 and result.ledger_charges == 1 and result.record == "done":
    print(f"{my_mode}: one charge, one ledger entry, record done. That is the keyed scribe's "
          "guarantee, on the deployed stack.")
elif result.charges > 1:
    print(f"{my_mode} charged {result.charges} times: its retry cannot tell that the first attempt "
          "already paid. The provider has to be told it is the same request.")
else:
    print(f"{my_mode} charged {result.charges} time(s) but its books say ledger "
          f"{result.ledger_charges}, record {result.record}: the money and the ledger disagree, "
          "and nothing alerts.")

# %% [markdown]
# <details><summary>Solution</summary>
#
# `my_mode = "keyed"`. `naive` and `robust` charge twice (robust's retry finds `in_progress` and
# charges again), `claim_first` charges once but never writes its ledger entry. Only `keyed` passes
# its idempotency key to the provider, so the retry's charge is a replay of the first.
# </details>
#
# ## Summary
#
# * `template.yaml` is five moving parts and a role that grants exactly the calls the code makes,
#   checked against the calls it was seen making.
# * The dry run on moto deploys the real template (expanded locally), fills in what moto drops,
#   and runs the function against the stack's own resources: naive 2 charges, keyed 1.
# * Real AWS is one opt-in away, tagged and cleaned up; the same code, the same result.
#
# To ship the pattern in your own function, start from the handler to copy,
# [`idem/core/handlers/keyed.py`](../idem/core/handlers/keyed.py): one file, standard library and
# boto3, with your provider's client in place of `make_provider()`. Then check your version the
# way the next chapter shows.
#
# **Next:** [10 Check your own handler](10_check_your_own_handler.ipynb)
