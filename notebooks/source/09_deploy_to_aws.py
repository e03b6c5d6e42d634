# %% [markdown]
# # 09 Deploy to AWS
#
# How do you ship the handler with `template.yaml`, and what does a rehearsal on moto prove?
#
# **After this chapter you can read `template.yaml`, rehearse its deploy offline, and run it on your
# own AWS account.**
#
# Lambda would run the same code the chapters ran against moto. `template.yaml` describes every
# resource the function needs. **CloudFormation**, AWS's service that builds resources from such a
# template, creates them together as a **stack**: one named set of resources, created, updated and
# deleted as a unit. The template has two profiles. The production profile, its default, runs
# payments; the next chapter runs it. The demo profile is this chapter's stack, made to be deleted.
# We deploy the demo on moto first, then, only if you opt in, on AWS.

# %% [markdown]
# ## Setup
#
# The deploy tool, the template, and a switch that stays off unless you start Jupyter with
# `IDEM_REAL_AWS=1`. The workbook's tests and Binder never set it.
#
# `template.yaml` is written for AWS SAM, a shorthand over CloudFormation. Its **SAM transform**
# expands each shorthand resource into the plain CloudFormation resources it stands for. AWS runs
# it when you deploy; here `aws-sam-translator` runs it, so the counts are of plain resources.

# %%
import json
import os
from collections import Counter

from idem import views
from idem.core.reconcile import job as reconcile_job
from idem.core.ledger import Ledger
from idem.deploy.aws_rules import calls
from idem.deploy import flow, package
from idem.deploy.local import lab
from idem.deploy import template as tp
from idem.deploy.local.moto_target import MotoDeployment
from idem.deploy.stack import TAGS
from idem.lessons.shipping import stack_order, stack_tour

REAL_AWS = os.environ.get("IDEM_REAL_AWS") == "1"
print(views.ship.template_summary(REAL_AWS))

# %% [markdown]
# ## The picture
#
# The article's five moving parts are here: the bucket, the function, the ledger, the provider and
# the failure queue. A role ties them together. Solid arrows are what happens on an upload; dotted
# ones are what the role allows; thick ones are what the hourly reconciliation reads and writes.
# Each function also has a log group, left out. In the demo, S3 invokes the function directly.
# In production an upload first
# waits in `UploadQueue`, and Lambda's **event source mapping**, its reader of a queue, calls the
# function with a batch of them. The next chapter says why.
#
# ```mermaid
# flowchart LR
#     U([you: put_object]) --> B[(UploadBucket<br/>versioned)]
#     B -- "demo: ObjectCreated, async" --> F[ChargeFunction<br/>prod: keyed.lambda_handler<br/>demo: entry.lambda_handler]
#     B -- "prod: ObjectCreated" --> UQ[[UploadQueue, prod]]
#     UQ -- "batches of 10" --> F
#     F -- "claim, commit" --> L[(LedgerTable<br/>TTL expires_at)]
#     F -- "charge, with key" --> P[(ProviderTable, demo<br/>Stripe, prod)]
#     F -. "retries used up" .-> Q[[FailureQueue]]
#     R{{ChargeFunctionRole}} -.- F
#     B ==>|"uploads"| C[ReconcileFunction<br/>every hour]
#     L ==>|"ledger lines"| C
#     P ==>|"this stack's charges"| C
#     C ==>|"uploads vs lines vs charges"| S[(ReportBucket)]
#     A[alarms] --> T[[AlarmTopic: email]]
# ```

# %% [markdown]
# ## Two profiles, one template
#
# The `Profile` parameter picks one. A template's *conditions* are named true-or-false values
# made from its parameters (`IsProd` is `Profile` equal to `prod`). A setting written
# `!If [IsProd, A, B]` is `A` in production and `B` in the demo; `!Ref AWS::NoValue` leaves a
# setting out. The table resolves both profiles, as CloudFormation would.

# %%
views.ship.profile_table()

# %% [markdown]
# The `handler` column is the one difference in the code: production runs the handler to copy,
# the demo the entry point (or `idem.demo_failure.lambda_handler`, its failure wrapper, when it
# stages a failure). Production keeps its books when the stack goes, and can restore the ledger to
# any second of the last 35 days (PITR, **point-in-time recovery**). The demo deletes everything.
# `tests/test_production_profile.py` checks each of these.

# %% [markdown]
# ### Two transforms, run before anything is made
#
# The template's first line names two *transforms*: macros CloudFormation runs over the
# template, in order, before it makes a resource. `AWS::LanguageExtensions` resolves the `!If`
# in each `DeletionPolicy` and `UpdateReplacePolicy`, where CloudFormation alone takes no
# function ([the transform](https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/function-refs-in-policy-attributes.html)).
# `AWS::Serverless-2016-10-31` (SAM) then expands each `AWS::Serverless::Function` into the
# function, its role and its event wiring. A deploy of a template with transforms must
# acknowledge them with `CAPABILITY_AUTO_EXPAND`.

# %%
views.template_lines("Transform:", "DeletionPolicy: !If")

# %% [markdown]
# Two more conditions decide what a production stack makes, and what it finds already made.
# A deleted production stack leaves its books behind: the ledger, the queues, the buckets and
# the log groups (`Retain`). Deployed again with `AdoptRetained=yes`, it uses them instead of
# making new ones of the same name. `CreateRetained` is false only then:

# %%
views.template_lines("CreateRetained:", "CreateUploadQueue:")

# %% [markdown]
# `RetainedReady` is an empty resource (a `WaitConditionHandle`) that names every kept resource
# the stack makes. Resources that use them by name wait for it (`DependsOn`), so they are made
# after what they use, whether the stack made it or adopted it.

# %% [markdown]
# ## What AWS makes, a few resources at a time
#
# A deploy hands the template to CloudFormation. It runs the two transforms, then creates each
# resource. It orders them by what refers to what: a `!Ref` or `!GetAtt` to another resource, or
# a `DependsOn`, makes this one wait for that one
# ([DependsOn](https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-dependson.html)).
# Below are the resources the handler needs, in four groups. Each listing is the template's own
# text. The linters' suppressions (`checkov` and `cfn-lint` blocks, each saying why a rule does
# not apply) stay in `template.yaml`, and a long resource shows only the settings its paragraph
# talks about.
#
# ### The parameters
#
# The demo's three knobs, each an environment variable of the function. `HandlerMode` picks the
# pattern; `FailurePoint` and `FailTimes` stage a failure that makes Lambda retry. In production
# they reach nothing.

# %%
knobs = ("Profile", "HandlerMode", "FailurePoint", "FailTimes")
views.show_text("\n".join(tp.section(name) for name in knobs), "yaml")

# %% [markdown]
# ### 1. The function and its trigger
#
# The SAM transform turns `ChargeFunction` into a Lambda function and what it needs around it: a
# published version with an alias `live`, and an event-invoke config. That config is the demo's
# asynchronous behaviour, which the local runtime imitates. Lambda retries twice and keeps an event
# at most six hours (`MaxEventAgeSeconds`), then sends it to the failure queue. The same value
# reaches the code as `MAX_EVENT_AGE_SECONDS` (chapter 07). The config is set on the alias, and
# applies only to what invokes the alias. So the bucket invokes `live`, not the plain function: an
# event sent to the plain function gets Lambda's defaults and no failure queue.

# %%
shown = ("FunctionName", "Handler", "Runtime", "Timeout", "Role", "EventInvokeConfig")
views.show_text(stack_tour.resource("ChargeFunction", keep=shown), "yaml")

# %% [markdown]
# What to notice:
#
# * `Handler` names the code Lambda calls, one per profile: production runs the handler to copy.
# * The settings left out include the environment, which hands the function the parameters and
#   the tables' real names.
# * Logs are JSON. The handler prints its metrics in CloudWatch's **Embedded Metric Format**
#   (EMF): JSON lines that CloudWatch turns into metrics, with no API call.
# * Production caps its **reserved concurrency**: a number of copies no other function can take,
#   and that it cannot exceed. Stripe allows 25 requests per second to one endpoint
#   ([rate limits](https://docs.stripe.com/rate-limits)); the next chapter sizes the cap.
# * In production each order becomes one PaymentIntent (chapter 06), first in Stripe's
#   **test mode**, which moves no real money.
# * The runtime is Python 3.13 on arm64, the version these chapters and their tests run.
#
# The trigger is the bucket's. Versioning gives each upload its own `versionId` (chapter 03). The
# bucket's `NotificationConfiguration` names the events that are orders, and where each goes: to
# the function in the demo, to a queue in production (the next chapter). S3 tests each
# destination when the notification is set. So in the demo the function's permission, which lets
# S3 invoke it for this bucket only, must exist first: `DependsOn` says so.

# %%
views.show_text(stack_tour.resources("UploadBucket", "ChargeFunctionUploadPermission",
                                     keep={"UploadBucket": ("VersioningConfiguration",
                                                            "NotificationConfiguration")}),
                "yaml")

# %% [markdown]
# The bucket's name is built with `!Sub` from the stack's name: had CloudFormation named it, the
# bucket and the function's permission would each wait on the other. Old versions expire after 90
# days; current versions never do. Its policy refuses plain HTTP and, once you name your
# uploader's role (`UploaderRoleArn`), every other writer. The hourly reconciliation lists the
# bucket's versions, 1,000 a request
# ([ListObjectVersions](https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html)).
# Past 200,000 versions it reads the daily S3 Inventory that production writes instead
# ([S3 Inventory](https://docs.aws.amazon.com/AmazonS3/latest/userguide/configure-inventory.html)).
# A window is then judged only once an inventory made after it exists, a day or more late.
#
# ### 2. The tables
#
# Both tables bill per request, so an idle table pays only for the data it stores. Only the ledger
# has a TTL, on `expires_at`, for the records of the teaching patterns (chapter 07). Keyed's
# records carry none: a claim may stand for a charge made, and a done record is a ledger line.
# Two indexes list the lines: `by_account` by account, `by_day` by day for the reconciliation.
# Each `!If [IsProd, ...]` is a setting the two profiles differ in. The customer mapping of
# chapter 03 lives here too, one item per account.

# %%
views.show_text(stack_tour.resource("LedgerTable", keep=("BillingMode", "AttributeDefinitions",
                                                          "KeySchema", "GlobalSecondaryIndexes",
                                                          "TimeToLiveSpecification")),
                "yaml")

# %% [markdown]
# ### 3. The queues
#
# The failure queue receives what Lambda gives up on. It keeps a message for 14 days, longer than
# any long weekend. The stand-in provider's table exists only in the demo. (Production adds
# `UploadQueue` in front of the function: the next chapter.)

# %%
views.show_text(stack_tour.resources("FailureQueue", "ProviderTable"), "yaml")

# %% [markdown]
# ### 4. The alarms
#
# When an alarm's metric crosses its threshold, CloudWatch notifies `AlarmTopic`, an SNS topic
# that emails `AlarmEmail` once the address confirms the subscription (or your own topic, named
# by `AlarmTopicArn`). Production refuses to deploy with neither: an alarm must reach someone.
# Here is every alarm the production profile makes, read from the template:

# %%
views.rows_frame(stack_tour.alarm_rows("prod"))

# %% [markdown]
# `Idem` metrics are the stack's own EMF counts, printed by its functions: `needs_attention`
# counts each parked order once. The `AWS/Lambda` and `AWS/SQS` ones AWS counts itself. A "math"
# row divides one count by others: `PendingAlarm` fires when an hour has at least 20 charge
# attempts and more than a fifth of them come back pending. Three rows watch a function chapter
# 10 introduces, the one Stripe calls. One alarm, whole:

# %%
views.show_text(stack_tour.resource("NeedsAttentionAlarm"), "yaml")

# %% [markdown]
# ### The role: exactly what the code calls
#
# Least privilege is easy to claim and easy to check. `calls.observed_calls()` runs all four
# patterns with and without failures and duplicates. It uses a boto3 session that notes every
# DynamoDB operation and its table. Next to it: what the role in the template grants.

# %%
views.show_text(stack_tour.resource("ChargeFunctionRole"), "yaml")

# %%
views.ship.role_table(flow.parameters("keyed"), tp.granted, calls.observed_calls(),
                      calls.SERVICE_CALLS | calls.TRACING_CALLS)

# %% [markdown]
# Every row is both needed and granted: no `Scan`, no `DeleteItem`, and `*` only for X-Ray, which
# takes no other resource. This is the demo's role. Production's also reads the Stripe key from
# **Parameter Store**, the AWS Systems Manager store for settings and secrets, and reads the order
# file by its version. It receives and deletes `UploadQueue`'s messages, and is denied every write
# to the customer mapping. If the code ever called something new,
# `test_role_grants_exactly_the_calls_the_function_makes` would fail until the template caught up.

# %% [markdown]
# ### What production asks of you and of Stripe
#
# The demo keys one charge per upload (`ORDER_IDENTITY=upload`), so it reads no order file.
# Production charges a real customer once per order, and needs four things first:
#
# * Order files. By default (`ORDER_IDENTITY=order-id`, chapter 03) each upload is JSON naming its
#   `order_id` and `amount_cents`, within the stack's `MinAmountCents` and `MaxAmountCents`.
# * A customer who can pay, linked to each account with `idem customers link` (chapter 03). The
#   customer's payment method was saved for **off-session** use: charged while the customer is
#   not there to confirm ([save and reuse](https://docs.stripe.com/payments/save-and-reuse)).
# * A **restricted key**: a Stripe secret key limited to the resources it names
#   ([restricted keys](https://docs.stripe.com/keys#limit-access)). The function needs
#   PaymentIntents write and read, and Customers read.
# * The `Stage` parameter, the function's `STAGE`. At cold start the function refuses a live key
#   unless `STAGE` is `prod`, and a test key where it is. `Stage=staging` rehearses on test mode.
#
# [Chapter 12](12_what_to_ship.ipynb) lists every step from this demo to the first real charge.

# %% [markdown]
# ## What ships: the core, nothing else
#
# The Lambda package must not carry moto, pandas or the notebooks. One function,
# `idem.deploy.package.core_files`, decides what ships, for `sam build` (through
# `function/Makefile`) and `python -m idem deploy` alike: `idem/__init__.py` and `idem/core/`.
# The failure wrapper ships only when a demo asks (`IDEM_DEMO=1 sam build`). Production also gets
# Stripe's SDK, built for arm64. The core as it ships, by folder:

# %%
shipped = package.core_files()
print(sorted({path.parent.as_posix() for path in shipped}),
      "| failure wrapper shipped:", any(path.name == package.DEMO_WRAPPER for path in shipped))

# %% [markdown]
# ## A deploy, call by call
#
# A deploy is a handful of calls to two services. S3 holds the code and the template.
# CloudFormation reads the template and makes the stack. It does so through a **change set**:
# the list of what it would add, change and delete, made before anything changes. `sam deploy` and
# `aws cloudformation deploy` create one, then execute it
# ([deploy](https://github.com/aws/aws-cli/blob/develop/awscli/examples/cloudformation/_deploy_description.rst)).
# Here we make each call ourselves with boto3, against moto. On your account, the same calls
# run on `boto3.client("s3")` and `boto3.client("cloudformation")`.
#
# moto cannot do three steps of a real deploy. One object, `harness`, does each of them in one
# named call, and the text says what each stands in for.
# [The appendix](13_appendix_the_local_aws.ipynb#deploy-gaps) shows how they work.

# %%
STACK = "idem-demo"
harness = MotoDeployment(STACK, say=views.say_folded)  # moto's account, and the steps moto lacks
s3, cloudformation = harness.clients["s3"], harness.clients["cloudformation"]

# %% [markdown]
# ### 1. The code, in a bucket
#
# Lambda loads a function's code from a zip in S3. SAM turns the template's `CodeUri` into the
# function's `Code`: a bucket and a key. Bucket names are global, so this one carries the account
# and the region.

# %%
code_bucket = harness.artifacts_bucket
s3.create_bucket(Bucket=code_bucket)
s3.put_object(Bucket=code_bucket, Key="idem-core.zip", Body=package.zip_bytes(demo=True))
print(f"s3://{code_bucket}/idem-core.zip")

# %% [markdown]
# ### 2. The template, in the same bucket
#
# A template sent inside the request (`TemplateBody`) may be at most 51,200 bytes
# ([CreateChangeSet](https://docs.rs/aws-sdk-cloudformation/0.14.0/aws_sdk_cloudformation/input/create_change_set_input/struct.Builder.html)).
# `template.yaml` is about 88 KB, so CloudFormation reads it from S3 (`TemplateURL`).
#
# On AWS you upload `template.yaml` itself, its `CodeUri` naming the zip, and CloudFormation
# runs its two transforms. moto's CloudFormation runs neither. So `harness.expand_transforms`
# runs them here, with aws-sam-translator: it stands in for that one step of CloudFormation's.
#
# The parameters pick the demo profile and the naive handler. `DeploymentType=AllAtOnce` makes a
# new version of the function live at once; production shifts traffic to it gradually, and rolls
# back on the charge alarms.

# %%
parameters = flow.parameters("naive")
expanded = harness.expand_transforms(parameters, code_bucket, "idem-core.zip")  # moto only
s3.put_object(Bucket=code_bucket, Key="template.json", Body=expanded.encode())
template_url = f"https://{code_bucket}.s3.{s3.meta.region_name}.amazonaws.com/template.json"
print(", ".join(f"{name}={value}" for name, value in parameters.items()))

# %% [markdown]
# ### 3. The change set: what would be made
#
# `CreateChangeSet` with `ChangeSetType="CREATE"` names a stack that does not exist yet; `UPDATE`
# would compare with one that does
# ([create-change-set](https://docs.aws.amazon.com/cli/latest/reference/cloudformation/create-change-set.html)).
# `Capabilities` are your consent to what the template does to your account:
#
# * `CAPABILITY_IAM`: the template makes IAM roles, such as `ChargeFunctionRole`. Without it,
#   CloudFormation refuses with `InsufficientCapabilities`.
# * `CAPABILITY_NAMED_IAM` would be needed instead if a role had a name of its own (`RoleName`).
#   This template names none, so CloudFormation names them.
# * `CAPABILITY_AUTO_EXPAND`: the template runs macros, here its two transforms
#   ([capabilities](https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.CfnCapabilities.html)).
#   A change set holds the template as the transforms left it, for you to review
#   ([Transform](https://docs.aws.amazon.com/console/cloudformation/transform-capabilities-warning)).
#
# The tags mark the stack as this workbook's: its teardown deletes only a stack that carries them.
# A waiter is boto3's loop that asks for a status until it is reached. `DescribeChangeSet`
# then lists the changes; here, counted by action and type:

# %%
cloudformation.create_change_set(
    StackName=STACK, ChangeSetName="create-naive", ChangeSetType="CREATE",
    TemplateURL=template_url,
    Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
    Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"], Tags=TAGS)
change_set = {"StackName": STACK, "ChangeSetName": "create-naive"}
cloudformation.get_waiter("change_set_create_complete").wait(**change_set)
changes = cloudformation.describe_change_set(**change_set)["Changes"]
kinds = Counter((c["ResourceChange"]["Action"], c["ResourceChange"]["ResourceType"])
                for c in changes)
for (action, kind), count in sorted(kinds.items()):
    print(f"{action} {count:2} {kind}")

# %% [markdown]
# Every change is an `Add`: the stack is new. Nothing exists yet. Two functions, because the
# hourly reconciliation is a function too. Three roles: one per function, and one for EventBridge
# Scheduler, which starts the reconciliation every hour.
#
# That is 39 resources, where the first line of this chapter counted 43 in the demo. Each deploy
# moves the alias `live` to the new version through CodeDeploy, AWS's service that shifts traffic
# between versions. moto's CloudFormation can make neither the alias nor CodeDeploy's application
# and deployment group. So `expand_transforms` leaves out those three and CodeDeploy's role, and
# points what named the alias at the function. On AWS all 43 are made.
#
# ### 4. Execute, and wait
#
# `ExecuteChangeSet` makes exactly what the change set listed. The stack is done when its status
# is `CREATE_COMPLETE`. Then moto's CloudFormation leaves a few things out: the stack's outputs,
# the buckets' versioning, the upload bucket's notification, the table's TTL, and each function's
# event-invoke config. The next call,
# `harness.fill_gaps()`, sets each one on moto and prints each setting it filled. On AWS there is
# nothing to set.

# %%
cloudformation.execute_change_set(**change_set)
cloudformation.get_waiter("stack_create_complete").wait(StackName=STACK)
_ = harness.fill_gaps()  # moto only
outputs = {o["OutputKey"]: o["OutputValue"]
           for o in cloudformation.describe_stacks(StackName=STACK)["Stacks"][0]["Outputs"]}
print("function:", outputs["FunctionName"], "| ledger:", outputs["LedgerTableName"])

# %% [markdown]
# ### 5. The order: what waited for what
#
# `DescribeStackEvents` returns the stack's events, newest first
# ([describe-stack-events](https://docs.aws.amazon.com/cli/latest/reference/cloudformation/describe-stack-events.html)).
# On AWS each resource adds a `CREATE_IN_PROGRESS` and a `CREATE_COMPLETE`. Read oldest first,
# they give the order in which the resources were made:

# %%
events = cloudformation.describe_stack_events(StackName=STACK)["StackEvents"]
for event in reversed(events):
    print(event["LogicalResourceId"], event["ResourceType"], event["ResourceStatus"])

# %% [markdown]
# moto 5.2 records only the stack's own three events, not one per resource. The order is the
# template's, though, so we can read it from there. A resource waits for every resource it
# names: a `!Ref`, a `!GetAtt`, a `${Name}` in a `!Sub`, or its `DependsOn`. CloudFormation
# makes in parallel all that waits for nothing more
# ([DependsOn](https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-dependson.html)).
# So a stack goes up in waves:

# %%
for line in stack_order.wave_lines(json.loads(expanded)):
    views.say_folded(line)

# %% [markdown]
# What to notice, group by group:
#
# * The tables, the failure queue and the alarm topic name nothing, so they come first.
# * The role names the provider table's ARN, so it waits for it. The function names its role's
#   ARN, and `DependsOn: RetainedReady`: it comes after everything it uses.
# * The function's version, event-invoke config and permission name the function: wave 4. So
#   do the alarms that watch it.
# * The upload bucket comes in wave 6, its policy after it. The bucket's notification names the
#   function, and it waits on `UploadNotificationReady`, which names the permission.
#   CloudFormation checks that the bucket may invoke the function, so the permission must exist
#   first ([NotificationConfiguration](https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-s3-bucket-notificationconfig.html)).
#
# On AWS, the events show the same rule: no resource starts before what it waits for is complete.
# The waves there also hold the four resources moto cannot make, and what waits for the alias.

# %% [markdown]
# ### The naive function, one upload
#
# moto cannot run Lambda code. `harness.upload` stands in for Lambda: it puts the file in the
# stack's bucket, then the local runtime runs the *deployed* function's handler. It uses that
# function's environment and event-invoke config, on the stack's tables and queue. The stack
# stages a failure: the first attempt fails after its charge.

# %%
naive_run = harness.upload("alice/order-1.txt")
fig = views.timeline(harness.attempts[naive_run.key], title=naive_run.line())

# %% [markdown]
# The provider was paid on the first attempt, which then failed, and paid again on the retry. The
# ledger, read back from the stack's own table:

# %%
ledger = Ledger(harness.clients["dynamodb"], outputs["LedgerTableName"], harness.clock)
views.compact_items(ledger.items())

# %% [markdown]
# ### Switch the mode: an update, through a change set
#
# `HandlerMode=keyed` is a stack update: a change set of type `UPDATE` on the same stack. Its
# `DescribeChangeSet` names what the new parameters change.

# %%
parameters = flow.parameters("keyed")
expanded = harness.expand_transforms(parameters, code_bucket, "idem-core.zip")  # moto only
s3.put_object(Bucket=code_bucket, Key="template.json", Body=expanded.encode())
cloudformation.create_change_set(
    StackName=STACK, ChangeSetName="switch-to-keyed", ChangeSetType="UPDATE",
    TemplateURL=template_url,
    Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
    Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"])
change_set = {"StackName": STACK, "ChangeSetName": "switch-to-keyed"}
cloudformation.get_waiter("change_set_create_complete").wait(**change_set)
for change in cloudformation.describe_change_set(**change_set)["Changes"]:
    print(change["ResourceChange"]["Action"], change["ResourceChange"]["LogicalResourceId"])

# %% [markdown]
# `ChargeFunction` is modified: one environment variable, `HANDLER_MODE`. Only its text changed
# in the expanded template. moto also lists `AlarmTopic`. It stored that resource with an empty
# `Properties` the template does not write, so its comparison sees a change.
#
# Execute it, wait, and upload a fresh file. The stack's clock runs on, so keyed's first attempt
# starts at 60 s.

# %%
cloudformation.execute_change_set(**change_set)
cloudformation.get_waiter("stack_update_complete").wait(StackName=STACK)
_ = harness.fill_gaps()  # moto only
keyed_run = harness.upload("alice/order-2.txt")
fig = views.timeline(harness.attempts[keyed_run.key], title=keyed_run.line())

# %% [markdown]
# The failed attempt gave its lease back, so the retry called the provider with the same key, which
# replayed the first charge. The table now, one short row per item:

# %%
views.compact_items(ledger.items())

# %% [markdown]
# Keyed's record is its ledger line: `done`, with the account, the cents and the charge id. The
# `account#alice` counter is naive's.

# %%
print("failure queue depth:", flow.queue_depth(harness.clients["sqs"], outputs["FailureQueueUrl"]))
views.items_frame([run.row() for run in harness.runs])

# %% [markdown]
# Had an event reached the queue, `python -m idem redrive --queue-url URL --function NAME:live`
# would send it back to the function's alias as it was (chapter 10's runbook).

# %% [markdown]
# ### The hourly reconciliation, on this stack
#
# `ReconcileFunction` runs `idem/core/reconcile/job.py` every hour. It compares three lists for one
# closed hour: the uploads the bucket holds, the ledger lines booked, and this stack's charges at
# the provider. Lines and charges are read a little wider, since a retry may book a charge later.
# Each finding comes with the command that settles it, in a report in the report bucket.
#
# An upload whose event never reached the function leaves no line and no charge. Only the list of
# uploads shows it. So before the job runs, we put one more order file in the bucket and let its
# event get lost:

# %%
print("event lost for", views.ship.lose_upload(harness, "bob/order-3.txt"))

# %%
views.show_source(reconcile_job.compare)

# %%
report = views.ship.reconcile_on(harness)
print(views.ship.reconcile_line(report))
views.ship.reconcile_frame(report)

# %% [markdown]
# Three uploads, one ledger line, three charges. Keyed's upload, line and charge agree, so keyed
# has no row. Naive keeps no line per upload, so its upload has none, and its two charges are one
# for the order and a second one. The settle command books the first; the refund undoes the
# second. Bob's upload has no line and no charge. There `idem settle` finds no record and no
# charge, and says to send the upload's event again: its key makes that charge once. On AWS any
# finding fires `ReconcileDifferencesAlarm`.

# %% [markdown]
# ### Teardown
#
# CloudFormation cannot delete a bucket that holds anything. In a versioned bucket that means
# every version and every delete marker, not only the current objects. This empties one, a page
# of at most 1,000 at a time:

# %%
views.show_source(flow.empty_bucket)

# %% [markdown]
# Empty both of the stack's buckets, then delete the stack and wait. `harness.teardown()` then
# deletes the code bucket and lists anything of the stack's still on moto.

# %%
for bucket in (outputs["BucketName"], outputs["ReportBucketName"]):
    print(bucket, "emptied:", flow.empty_bucket(s3, bucket), "object versions")
cloudformation.delete_stack(StackName=STACK)
cloudformation.get_waiter("stack_delete_complete").wait(StackName=STACK)
leftovers = harness.teardown()

# %% [markdown]
# ### Try it: take a wait away
#
# `UploadBucket` waits for `UploadNotificationReady` only because its `DependsOn` says so. Take
# that line away, in your head first. In which wave would CloudFormation now make the bucket? And
# is `ChargeFunctionUploadPermission` then sure to exist before it? The check takes the
# `DependsOn` away from the expanded template and reads the waves again.

# %%
my_wave = None  # a number: 1 is the first wave
my_permission_first = None  # True or False

# %%
without = stack_order.without_depends_on(json.loads(expanded), "UploadBucket")
print(stack_order.check_wave_prediction(my_wave, my_permission_first, without))

# %% [markdown]
# <details><summary>Solution</summary>
#
# Wave 4, and no. The bucket's notification still names the function, made in wave 3, so the
# bucket comes in wave 4. The permission names only the function too: it is made in wave 4, side
# by side with the bucket. Nothing orders the two. CloudFormation may then set the notification
# before the bucket may invoke the function, and the create fails. With the `DependsOn`, the
# bucket waits for `UploadNotificationReady`, which waits for the permission.
# </details>

# %% [markdown]
# `python -m idem deploy` runs all of the above in one go. It exits 0 only if naive charged twice
# and keyed once.

# %% [markdown]
# ## Explore the deployed stack
#
# Pick the template's parameters: each change deploys a fresh stack on moto, uploads one order and
# shows what the provider charged.
# %% tags=["nbval-ignore-output"]
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
# This part runs only with `IDEM_REAL_AWS=1` and your AWS credentials and region. It creates a
# tagged stack and code bucket, uploads two orders
# (naive, then keyed), waits for Lambda's retry, reads the ledger and deletes everything it made.
# It never touches a stack it did not tag. From a terminal, the same:
# `python -m idem deploy --target aws --yes --region eu-west-1`.
#
# With the SAM CLI, `samconfig.toml` holds three environments: `default` is the demo, `prod` the
# production stack, and `staging` the production profile on Stripe's test mode. A `--parameter-overrides` on the command line replaces the whole
# `parameter_overrides` line of `samconfig.toml`, not one value in it
# ([precedence](https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/serverless-sam-cli-config.html)).
# So repeat every value you keep: without `Profile=demo`, the template's default, production, is
# deployed.
#
# ```
# sam build && sam deploy --guided
# sam logs --stack-name idem-demo --name ChargeFunction --tail
# ```
#
# The bucket is versioned, and `sam delete` fails while any version or **delete marker** is left
# in it. A delete marker is what deleting an object leaves in a versioned bucket: the older
# versions stay behind it. Empty it first:
#
# ```
# python -m idem deploy --target aws --stack idem-demo --empty-bucket --sam --yes
# sam delete --stack-name idem-demo
# ```
#
# Or let `--delete --sam --yes` do both. `--sam` acts only on a stack made from this template,
# never on a production stack.
#
# ### What real AWS printed: no stored example
#
# Every stored output here comes from moto, on a machine with no AWS account. The rehearsal does
# not show that AWS behaves as moto does: retry timing, TTL deletes and IAM are AWS's own, and the
# gap cell's settings were set by hand. Run the next cell on your account and keep its output,
# with when and where it ran: it is the evidence this copy lacks.

# %%
if REAL_AWS:
    import datetime

    from idem.deploy.aws import aws_target

    session = aws_target.preflight(region=None, yes=True)
    print(f"captured on AWS, region {session.region_name}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    real_runs = aws_target.run(session, "idem-demo", keep=False, wait_seconds=300)
    print(views.items_frame([run.row() for run in real_runs]).to_string(index=False))
else:
    print("skipped: start Jupyter with IDEM_REAL_AWS=1 (and AWS credentials) to run this on AWS")

# %% [markdown]
# If a run was interrupted, `python -m idem deploy --target aws --stack idem-demo --delete --yes`
# deletes what it left, and only a stack carrying its tag.
# %%
if REAL_AWS:
    aws_target.delete(session, "idem-demo")
else:
    print("skipped: nothing was created")

# %% [markdown]
# ## Try it
#
# `FailTimes=always` stages a poison event: the function fails after the charge on every attempt.
# Deploy `HandlerMode=keyed` that way, in your head first. Chapter 00's table gives its verdict,
# `needs_attention`, and one charge. Predict what the verdict does not say: how many invocations
# Lambda makes, the ledger entries, the events in the failure queue, and the status the order's
# record is left in. The check deploys that stack on moto and compares.

# %%
my_prediction = {"invocations": None, "ledger entries": None, "events in the failure queue": None,
                 "the record's status": None}  # your answer: numbers, and a status as a string

# %%
result = lab.try_stack("keyed", "after_charge", "always")
print(views.ship.check_stack_prediction(my_prediction, result))

# %% [markdown]
# <details><summary>Solution</summary>
#
# Three invocations, no ledger entry, one event in the failure queue, and a record left
# `in_progress`. Lambda retries a function error twice, so the first attempt and two retries
# run. The key makes every retry's charge a replay, so money moves once. No attempt reaches its
# commit, so the ledger books nothing. Each attempt gives its lease back before it raises, and
# nothing marks the record, so it stays `in_progress`: the verdict `needs_attention` comes from
# the failure queue, not from the record. The hourly reconciliation reports the charge as one
# not on the books. One `idem settle` with the order's key books it.
# </details>
#
# ## Summary
#
# * You ship the handler as one stack from `template.yaml`: five moving parts, and a role that
#   grants exactly the calls the code was seen making.
# * A deploy is a few calls: the code and the template into S3, a change set with the IAM and
#   macro capabilities, its execution, a waiter. The stack goes up in waves of what waits for what.
#   On moto, naive then charges twice and keyed once.
# * It proves the template and the code agree, not that AWS reads the template the same way: the
#   opt-in cells run it on your account. The next chapter runs the production profile.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [10 Run it in production](10_run_in_production.ipynb)
