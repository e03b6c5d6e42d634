# %% [markdown]
# # 12 What to ship
#
# What do you take away to production?
#
# **After this chapter you can pick the pattern a handler needs, adapt the keyed handler, and check it before you ship.**
#
# The chapters so far ran one upload through five handlers. This chapter gathers what they showed into
# four things to take with you. First comes one table of every pattern, measured. Then a decision
# diagram, and a checklist. Last comes the handler to copy, with the steps to make it yours.

# %% [markdown]
# ## Setup
#
# The views that gather each pattern's measurements, the handler to copy, and the runs that show
# who pays and how old a key may grow.

# %%
from idem import views
from idem.core.handlers import (keyed, keyed_event_shapes, keyed_events, keyed_orders,
                                keyed_settings, keyed_stripe)
from idem.lessons.scribes import money
from idem.lessons.shipping import production

print("patterns:", ", ".join(views.ship.PATTERNS))

# %% [markdown]
# ## Every pattern in one table
#
# Each row below is measured in this cell, in fresh local worlds. Chapter 00's table has eight
# rows of faults and deliveries. The first three columns count the rows that end in each costly
# or silent failure. The `key to provider` column says whether the pattern's charge carried an
# idempotency key, read back from the provider after one upload. The cost columns come from DynamoDB's
# billing rules (chapter 08): the calls one delivery makes, then its request units (`W` write,
# `R` read). The last column prices a first delivery at on-demand rates.

# %%
rows = views.pattern_rows()
views.pattern_table(rows)

# %% [markdown]
# Read it from left to right. Only one row is `no` in all three failure columns, and it is the
# only row that shares its key with the provider. A duplicate costs one call everywhere, but only
# a pattern with a record turns it away: naive's one call books a second charge. The last column
# is what each guarantee costs: compare it with the cost of one refund.

# %% [markdown]
# ## Which pattern do you need?
#
# Not every handler needs the whole ceremony. Start at the top and stop at the first box that
# fits:
#
# ```mermaid
# flowchart TD
#     A{"is the effect<br/>an overwrite?"} -- yes --> N["Make it one.<br/>No record needed."]
#     A -- no --> B{"is losing an upload<br/>acceptable?"}
#     B -- "yes, reconciled,<br/>and cost matters most" --> C["claim_first<br/>+ reconciliation"]
#     B -- no --> D{"where does<br/>the effect land?"}
#     D -- "your own<br/>DynamoDB table" --> T["One transaction:<br/>the effect + the done record"]
#     D -- "a provider<br/>that takes keys" --> K["keyed: a claim with a lease,<br/>the key to the provider,<br/>a fenced commit"]
#     D -- "a provider<br/>without keys" --> L["keyed's claim and commit,<br/>its look-up before every charge,<br/>needs_attention when unsure"]
#     K -. "you prefer a library" .-> P["Powertools, its key passed<br/>to the provider, the ledger<br/>line booked once"]
# ```
#
# * *An overwrite* is already idempotent. A thumbnail written twice is the same file. Name the
#   result after the upload and set it; never add to it.
# * *claim_first* never charges twice, but a failure after its claim loses the work silently.
#   Use it only when a lost upload is acceptable and a reconciliation job finds the losses.
# * *Your own table*: write the effect and the `done` record in one transaction. Both land, or
#   neither does. Chapter 08 builds one (`commit_designs.transaction_commit`) and prices it.
# * *A provider with keys*: the keyed handler. Its claim keeps copies apart, the key makes a
#   retried charge the same charge, and the fenced commit books it once.
# * *A provider without keys*: no code of yours can tell whether a lost answer moved money. Look
#   the charge up by the upload before charging again, and mark the record `needs_attention` when
#   the look-up cannot tell. keyed already has that look-up. It runs once an order's key is 23
#   hours old (chapter 06), or its event older than the key window (chapter 07's redrive). Run it
#   before every charge only if it reads the provider's records at once, by an id you chose. A
#   search will not do: Stripe's search can lag
#   by up to an hour, and Stripe says not to use it right after a write
#   ([search](https://docs.stripe.com/search)). A retry comes a minute after its lost answer, so a
#   lagging search would miss the charge and charge again.
# * *Powertools* gives the claim and the expiry for free. Pass its key to the provider, or an
#   error after the charge charges again. Book the ledger line only if it is absent, or an error
#   after the ledger write books it twice (chapter 08's `book_once`). The table's `powertools` row
#   is Powertools as most handlers use it, without these two changes. The changed version has no
#   row here: run `idem check` on it (chapter 11) to measure it.
#
# Whatever you choose, reconcile on a schedule (chapter 07).

# %% [markdown]
# Say what your handler needs. The explorer walks the diagram and gives its reasons, each taken
# from a row of the table above.

# %% tags=["nbval-ignore-output"]
views.recommend_explorer(rows)

# %% [markdown]
# The same call with the widget's starting values:

# %%
_ = views.recommend_explore(rows, "a charge, provider takes keys", "no", "can overlap",
                            "matters little", "hand-rolled")

# %% [markdown]
# Try `yes, and reconciled` with both costs. The saving that buys the risk of silent loss is
# printed, per million uploads.

# %% [markdown]
# ## The checklist
#
# Each item says what to check and why. The number in parentheses is the chapter that shows it.
#
# - [ ] **The key names the order, not the upload or the attempt.** By default it is made from
#   the account and the `order_id` in the file. Every copy, retry and retried PUT of one order then
#   shares one key, and two accounts' order 1001 are two orders (03).
# - [ ] **Who pays never comes from the file.** It comes from the customer mapping, written by
#   `idem customers link`, which the function may only read. A file naming another customer is
#   parked (03).
# - [ ] **The file is strict and the amount bounded.** `amount_cents` is required, between
#   `MIN_AMOUNT_CENTS` and `MAX_AMOUNT_CENTS`, in a currency `CURRENCIES` allows. An unknown field
#   is parked, never charged a default (03).
# - [ ] **The order file is read at its exact version.** By its `versionId`, or, without
#   versioning, only while its eTag still matches. Every retry then reads the same order (03).
# - [ ] **The claim is one conditional write.** No read comes before the write that decides. Two
#   copies can both read "absent" and both charge (02).
# - [ ] **A failed claim returns the record.** Ask for `ReturnValuesOnConditionCheckFailure`. The
#   duplicate then learns why it lost in the same call (02).
# - [ ] **The record says how far the work got.** It holds `in_progress` or `done`, an owner and a
#   lease end. A retry must tell finished work from work in flight (05).
# - [ ] **The lease ends at the function's deadline.** Keep the function timeout close to the
#   work. A crashed invocation then blocks its retries only briefly (06).
# - [ ] **The commit is fenced to the owner.** Its condition names the invocation that claimed.
#   A zombie whose lease ran out cannot overwrite the work of its successor (06).
# - [ ] **The provider gets the same key on every attempt.** Send the same parameters too: keep
#   the payment method chosen on the first attempt. Only the provider can tell that a lost answer
#   already moved money (06).
# - [ ] **The key's age is counted from the first attempt.** The record keeps `first_attempt_at`
#   through every takeover. From 23 hours on, search the provider by the key before any charge,
#   and park the order when the search gives no answer (06).
# - [ ] **Failures are loud.** Raise on failure, set an on-failure destination, and alarm on its
#   depth. A failure nobody sees is a silent loss (04). Without a destination, Lambda discards
#   the event after its last retry, and `idem check --template` counts it lost (11).
# - [ ] **Records outlive every copy.** A done record lives as long as a copy can come; keyed's
#   never expire. The provider's key window is no shorter than the maximum event age, checked at
#   cold start (07).
# - [ ] **Where records expire, expiry is checked in code.** Compare `expires_at` with the clock
#   on every read (keyed's records never expire). TTL typically deletes items within two days of
#   expiry, with no promised bound, and reads still return them until then (07).
# - [ ] **A redrive sends the event as it was.** Its `eventTime` tells the handler to look the
#   charge up before charging an old event (07).
# - [ ] **Nothing is remembered in the container.** A cold start begins empty, so memory can only
#   be a hint (01).
# - [ ] **A job reconciles on a schedule.** It compares uploads, records and the provider's
#   charges. Prevention cannot prove that nothing slipped through (07).
# - [ ] **`idem check` holds for your handler.** Name every effect that must happen once. One fix
#   can move a break instead of removing it (11).

# %% [markdown]
# ## The handler to copy
#
# You copy five of the folder's six `keyed*.py` files into your function's folder, then change them for
# production. `keyed.py` is the handler: the claim, the charge with the key, the commit and the
# entry point. Its siblings hold the rest: which order an upload is (`keyed_orders.py`), the event
# parser with the log lines (`keyed_events.py`), the settings and the DynamoDB record
# (`keyed_settings.py`), and `keyed_stripe.py`, the Stripe adapter and what each of Stripe's answers
# means. A sixth file, `keyed_event_shapes.py`, is what you may
# drop: the shapes and modes the production stack never uses (SNS and EventBridge events; the
# order modes of chapter 03 that read no order file). Without it those events are refused as
# malformed and those modes refuse to start. As shipped they charge each order once: the customer the
# account is linked to, at the amount the file names, within the limits. Before a real customer is
# charged you set, as *Make it yours* below shows:
#
# * who pays: each account linked to a Stripe customer whose payment method is saved for
#   off-session use;
# * what an order is: `ORDER_IDENTITY`, and order files that name their `order_id`;
# * the provider's secret: a restricted live key in Parameter Store, and `STAGE`, checked at cold start;
# * the ledger table, the function's settings, and the alarms with an address that gets their email.
#
# Then add `stripe` (16.x, the version the tests ran) to your function's requirements.
# Lambda's Python runtime does not include it. The lines below read every file and list the
# modules it imports. None imports `idem`, so they run from any folder:

# %%
print(views.ship.files_to_copy(keyed, keyed_orders, keyed_events, keyed_settings, keyed_stripe))
print("optional:")
print(views.ship.files_to_copy(keyed_event_shapes))

# %% [markdown]
# `keyed.py` is the file to read before you copy: the protocol of chapters 02 to 07, and nothing
# else. Read the siblings when you change what they do. A test holds `keyed.py` to its size.

# %% [markdown]
# Its entry point reads the settings once per container, then charges each order of the event
# once. One parser reads the event, the same one the workbook and the command line use. A record
# it cannot read fails the invocation after the good ones, so the event reaches the failure queue.
# Each upload writes one JSON log line. Each invocation prints one metric document, in CloudWatch's
# **Embedded Metric Format** (EMF): a JSON log line that CloudWatch turns into metrics, with no
# API call ([EMF](https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html)).
# An alarm can then count the uploads that need a person:

# %%
views.show_source(keyed.lambda_handler)

# %% [markdown]
# Each order goes through the three steps of chapter 06: claim with a lease, charge with the key,
# commit as the owner. A lost claim reads the record it lost to and acts on its status:

# %%
views.show_source(keyed.KeyedCharger.charge_once)

# %% [markdown]
# ### Make it yours
#
# Six settings adapt it to your system. First, the payment provider. `make_provider()` builds
# Stripe's client from a secret key in SSM Parameter Store, named by `STRIPE_SECRET_PARAMETER`.
# The key is read at cold start, read again after Stripe refuses it (a rotated key), and never
# logged. For another provider, replace this
# function. Its `charge` must take an `idempotency_key`:

# %%
views.show_source(keyed_stripe.make_provider)

# %% [markdown]
# Before it builds the client, it checks the key against `STAGE`. A live key (`sk_live_`,
# `rk_live_`) starts only where `STAGE` is `prod`, and a test key only elsewhere. Otherwise the
# function logs one line and refuses to start, so nothing is charged:

# %%
views.show_source(keyed_stripe.check_key_mode)

# %% [markdown]
# The adapter charges through Stripe's own SDK. It sends the order's key as Stripe's
# `Idempotency-Key`, and metadata that name the stack, the account and the order (chapter 06
# shows each parameter). Who pays is the account's linked customer (`cus_...`), charged
# off-session with the file's `payment_method` or the customer's saved default. The handler reads
# that default on the first attempt and keeps it in the record, so every retry sends the same:

# %%
views.show_source(keyed_stripe.StripeProvider.charge, keyed_stripe.StripeProvider.find_charges)

# %% [markdown]
# The search above runs before any charge once the order's key is 23 hours old, counted from the
# record's `first_attempt_at`, or once its event is older than the key window. Stripe's search
# usually lags by under a minute, and by up to an hour during outages
# ([search](https://docs.stripe.com/api/payment_intents/search); it is not offered to merchants in
# India). So from 23 h on it has caught up with every charge of the first 22 h, and the key
# replays anything newer. A search with no answer parks the order. Here is the order of chapter
# 06, charged and never booked, uploaded again 25 hours later, after Stripe pruned its key:

# %%
late = money.resent_later(25)
print(f"first attempt at t={late.first_attempt_at_s:g} s; "
      f"keys Stripe pruned: {late.keys_stripe_pruned}; searched Stripe: {late.searched_stripe}")
print(f"keyed says: {late.handler_says}; PaymentIntents for the order: {late.payment_intents}")

# %% [markdown]
# One PaymentIntent: the search found the charge, and keyed booked it without a charge call.
#
# Stripe's answers are read by their error `type` and `code`, not by HTTP status alone
# (`keyed_stripe.meaning_of`). A card error is a final decline, recorded with its decline code. A
# rate limit, a lock, the same key still in flight, a 5xx other than 500 or a lost connection
# releases the claim, and Lambda retries with the same key. So does a 5xx or a timeout on the read of the customer's
# default method, which sends no key. A refused secret key (401), or a restricted key without the
# permission (403), fails the invocation, is counted as `auth_failed`, and the retry reads the key
# again; the order is never parked for it. A saved 500, an `idempotency_error` or an invalid
# request parks the order for a person. One of them says "nothing was charged": a 400
# `invalid_request_error` with no PaymentIntent in it, when no earlier attempt sent under the key.
# The fixed upload then takes the order over under the same key. A PaymentIntent left
# `processing` is recorded `pending`, not booked. The webhook settles it once Stripe decides:
# `done`, or `declined` for a failed or canceled one (`idem settle` does it by hand).
#
# Second, who pays. Your checkout saves each customer's payment method for off-session use, and
# makes it the customer's default. Then a person links the account to that customer, once:
# `idem customers link ACCOUNT cus_... --reason TEXT --stack STACK --yes`. The command records
# who linked it (the caller's ARN) and why. The handler reads that link, the customer mapping of
# chapter 03, with a strongly consistent read. In production its role is denied every write to
# it. An account with no link, or a file that names another customer, is parked:

# %%
views.show_source(keyed_orders.who_pays)

# %% [markdown]
# Here it is on the handler, over moto and the local Stripe, with alice and bob linked and carol
# not. The reasons are chapter 03's:

# %%
views.Whole(money.who_pays_rows(money.who_pays()))

# %% [markdown]
# Third, what an order is. `ORDER_IDENTITY` is `order-id` by default (chapter 03): the file is
# JSON and names its `order_id` and `amount_cents`, an integer. It may name `currency`,
# `customer` (only the linked one) and `payment_method`, and nothing else. Any other field, or a
# missing amount, parks the order: there is no fallback price. The amount must lie between
# `MIN_AMOUNT_CENTS` and `MAX_AMOUNT_CENTS`, in a currency `CURRENCIES` allows. The modes that
# read no file (`object-name`, `upload`) charge every upload `PRICE_PER_UPLOAD_CENTS`, and refuse
# to start without it.

# %% [markdown]
# Fourth, create the ledger table as `template.yaml` does, shown in
# [chapter 09](09_deploy_to_aws.ipynb). The partition key is `pk`,
# and TTL is on `expires_at`. Two sparse indexes hold the done records, which are the ledger
# lines: `by_account` for an account's totals, `by_day` for the reconciliation. `by_day` also
# holds the records still `pending`, under the day `pending`. The customer
# mapping lives in the same table, one `account#...` item per account.
#
# Fifth, set the function's environment. `LEDGER_TABLE` is required. Set the money limits
# (`CURRENCIES`, `MIN_AMOUNT_CENTS`, `MAX_AMOUNT_CENTS`) to what one order may cost you. The limits
# count the currency's smallest unit (cents for `usd`, yen for `jpy`), so one function's currencies
# must count as many decimals: `usd,jpy` refuses to start. Set
# `MAX_EVENT_AGE_SECONDS` and `FUNCTION_TIMEOUT_SECONDS` to your function's settings. The cold
# start then checks two things. The provider's memory of a key must outlast the maximum event age.
# The slowest path of one upload must fit in the timeout. Keyed reads no record TTL, because its
# records never expire:

# %%
views.show_source(keyed_settings.settings_from_env)

# %% [markdown]
# Sixth, the alarms. The stack's alarms email the address in `AlarmEmail`, and that address must
# confirm the subscription before any email comes. `AlarmTopicArn` names an SNS topic you already
# have instead, such as your pager's.

# %% [markdown]
# ### Check your version
#
# Then check what you changed, as chapter 11 does. The check is part of this workbook's `idem`
# package, so install it where you develop (not in the function). Name your handler as
# `FILE.py:FUNCTION` or `MODULE:FUNCTION`, and every other write that must happen once as an effect:
#
# ```
# python -m idem check my_function.py:lambda_handler --effect sqs:SendMessage
# ```
#
# It runs your handler, unchanged, through every schedule of faults, copies and retries. It exits
# 0 when nothing breaks, so a CI step can run this same command. Run it again after every change.
# Add `--provider stripe` to run the same schedules through Stripe's own SDK, against a local
# Stripe that keeps Stripe's rules.

# %% [markdown]
# ## From the demo to a real customer charged
#
# [Chapter 09](09_deploy_to_aws.ipynb) deployed the demo, and [Run it in production](10_run_in_production.ipynb)
# read the production profile. Between them and the first real customer charged lie the steps
# below, in order. Each names the file, the command or the AWS setting that does it. Steps 1 to
# 14 run in Stripe's test mode; from step 15 on, real money moves. Stripe documents saving a
# payment method for later ([save and reuse](https://docs.stripe.com/payments/save-and-reuse))
# and keys limited to some resources ([restricted keys](https://docs.stripe.com/keys#limit-access)).
#
# | # | step | file, command or AWS setting |
# | --- | --- | --- |
# | 1 | Copy the handler, its siblings and the Stripe adapter; ship `stripe` 16.x with them | `keyed*.py`; this repo's `function/Makefile` puts `stripe>=16.1,<16.2` for arm64 in the build |
# | 2 | Say what an order is: a JSON file naming `order_id`, `amount_cents` and, if you allow several, `currency` | `ORDER_IDENTITY=order-id`, the handler's default, which `template.yaml` leaves in place in prod |
# | 3 | Bound what one order may cost; there is no fallback price | `MinAmountCents`, `MaxAmountCents` and `Currencies`, the function's `MIN_AMOUNT_CENTS`, `MAX_AMOUNT_CENTS` and `CURRENCIES` |
# | 4 | Save each customer's payment method for off-session charges, in your checkout, and make it the customer's default; then link the account to the customer | a Stripe SetupIntent (it saves a payment method for later) with `usage=off_session`; then set the customer's `invoice_settings.default_payment_method` to it ([update a customer](https://docs.stripe.com/api/customers/update)), which the handler charges; then `idem customers link ACCOUNT cus_... --reason TEXT --stack STACK --yes` |
# | 5 | Let only your uploader write order files, each account under its own folder | `UploaderRoleArn`: the role your app assumes, each session tagged `account=<ACCOUNT>`; the bucket policy then refuses every other writer, and any folder but the session's own |
# | 6 | Check your version of the handler in CI | `python -m idem check my_function.py:lambda_handler --provider stripe` |
# | 7 | Scan the template for insecure settings; each skip carries its reason | `make checkov`, then `tests/test_checkov.py` (CI runs both) |
# | 8 | Create a restricted Stripe key: PaymentIntents write and read, Customers read, and Refunds write for `idem refund`, which reads the same key | Stripe Dashboard, *Developers > API keys*; a test key first |
# | 9 | Store the key where the function reads it at cold start | `aws ssm put-parameter --type SecureString`, named by `StripeSecretParameter` |
# | 10 | Make room for the reserved concurrency, sized to Stripe's default limit of 25 requests per second on one endpoint ([rate limits](https://docs.stripe.com/rate-limits)) | `aws lambda get-account-settings`; `ReservedConcurrency` |
# | 11 | Deploy production, with its SQS buffer (`UploadQueue`) in front of the function, every override repeated, a test stage and an alarm address | `sam deploy --config-env prod --parameter-overrides Profile=prod Stage=staging AlarmEmail=...` (or `AlarmTopicArn=...`) |
# | 12 | Confirm the alarm subscription from its email; until then no alarm mail arrives | the SNS confirmation link |
# | 13 | Upload a test order, then the same file again, and see one PaymentIntent, one ledger line and a clean reconciliation | `aws s3 cp order.json`, `sam logs`, the Dashboard in test mode, the report bucket |
# | 14 | Rehearse the runbook: settle an order that needs attention, refund a second charge, redrive | `idem settle`, `idem refund` (without `--yes` first: a dry run), `idem redrive` |
# | 15 | Swap in the live restricted key and deploy again as `prod`: the cold start refuses a live key unless `STAGE` is `prod`, and a test key in prod | `aws ssm put-parameter --overwrite`, then `sam deploy ... Stage=prod` |
# | 16 | From then on, deploy production only after a reviewer approves the change set (its overrides leave `Stage` at `prod`) | `.github/workflows/deploy.yml`, a GitHub environment with required reviewers |
# | 17 | Upload the first real order, and watch its charge, its ledger line and the next reconciliation | `sam logs --tail`, the Dashboard, the reconciliation report |
#
# The demo skipped steps 2 to 5 and 15: what an order is and costs, who pays, who may upload,
# and a key checked against its stage. The rest is the stack's: the buffer, alarms that reach someone,
# approved deploys, the runbook and the three-way reconciliation.
#
# ### What the stack guarantees, and what stays yours
#
# Deployed as shipped, the production stack holds these, read from `template.yaml`:

# %%
print(production.outage_lines())

# %% [markdown]
# It also refuses to deploy when its alarms would reach nobody, and keeps the ledger, queues and
# buckets when the stack is deleted. It reconciles every hour. Each window is judged once its
# uploads' tries are over: 27,900 s, about 7.75 hours, after it closes (`RECONCILE_LAG_SECONDS`).
# While the upload bucket holds up to 200,000 versions, the job lists them. Past that it reads
# S3's daily inventory of the bucket instead, and judges a window only once an inventory made
# after it exists: from then on its reports come a day or more late.
# No code of the stack can do the rest. These stay yours:
#
# * **Someone reads the alarms.** Confirm the subscription email, and make sure a person reads
#   that address on a weekend. A confirmed address that nobody reads is an alarm that reaches
#   nobody.
# * **Stripe's latency.** The concurrency cap holds Stripe's rate limit only while a charge call
#   takes as long as the line above says. That is an assumption, not a measurement: watch your
#   calls' duration, and lower `ReservedConcurrency` if they get faster. A 429 is retried, not lost.
# * **The account's concurrency quota.** Lambda's limit is per account and region. Other functions
#   share what is left; ask for more through Service Quotas before the deploy, not after.
# * **The key's permissions.** Stripe cannot check that your restricted key allows only what step
#   8 lists. Keep the secret key out of the template, the environment and the logs.
# * **A saved payment method.** The stack charges the customer the account is linked to. Your
#   checkout must have saved that customer's payment method for off-session use, and made it the
#   customer's default (step 4). Without a default, or when the customer was deleted at Stripe,
#   the handler charges nothing and parks the order for a person.
# * **Who may link and who may upload.** Whoever runs `idem customers link` decides who pays for an
#   account: keep that to a few people. Whoever can write an account's folder can order for that
#   account, up to `MAX_AMOUNT_CENTS` each time. Set `UploaderRoleArn`, and watch who may assume
#   that role.
# * **The orders themselves.** A wrong amount within the limits is charged that amount. The
#   contract is at most one charge per account and order over the order's life. A corrected
#   re-upload is left for a person. An order charged but never booked is searched for at Stripe
#   before any charge, once its key is 23 hours old. A search with no answer, two charges found,
#   or one on other terms leave it to a person.
# * **How long orders are kept.** The upload bucket grows forever. Old versions expire after 90
#   days, but the current version of every order never expires. Whether to delete orders, and
#   when, is your decision: a lifecycle rule of your own, once the reconciliation has judged
#   their window and your records no longer need the file.
# * **Declines and pending charges.** A decline is final for its key. `DeclinedAlarm` mails you
#   when more than a fifth of an hour's attempts are declined, in an hour of 20 attempts or more;
#   a single decline mails nobody. A decline's code says whether the customer must fix the card
#   or a later attempt may pass ([decline codes](https://docs.stripe.com/declines/codes)). Either
#   way, a new order (a new `order_id`) charges anew. A charge left `processing` is recorded
#   `pending`, not booked, and the webhook books it once Stripe has decided. `PendingAlarm`
#   likewise mails you when more than a fifth of such an hour's attempts come back pending. One
#   still pending when its window is judged is its own finding in the reconciliation's report,
#   `pending`, settled by `idem settle --key KEY`.

# %% [markdown]
# ## Try it
#
# Four systems each react to an upload. Pick what each needs, from `overwrite`, `claim_first`,
# `transaction` and `keyed`. None of them is a case this chapter ran. Walk the diagram for each,
# and write down your four answers before you run the check.

# %%
for name, system in views.SYSTEMS.items():
    print(views.fold_report(f"{name:9}  {system}"))

# %%
my_choices = {"invoice": None, "refund": None, "balance": None, "chat": None}  # your answer here

# %%
print(views.check_choices(my_choices, rows))

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# my_choices = {"invoice": "overwrite", "refund": "keyed", "balance": "transaction",
#               "chat": "claim_first"}
# ```
#
# The invoice is an overwrite: one order gives one file under one name, so writing it again is
# harmless. The refund moves money at Stripe, which refunds part of a payment again and again
# until the whole payment is refunded
# ([create a refund](https://docs.stripe.com/api/refunds/create)). So a retried refund is a second
# refund, unless it carries the key that only keyed passes. The balance lives in your own table,
# so one transaction writes it with the `done` record. The chat API has no key, so a retry could
# post twice. A post a day late harms no one, so a lost post is acceptable once a scheduled job
# finds the claims that never finished and posts them. claim_first fits, and it costs least for
# millions a day. "Keyed everywhere" is safe for three of the four, and wrong for the chat.
# </details>

# %% [markdown]
# ## Summary
#
# * Measured side by side, only keyed has no double charge, no silent loss and no silent mismatch.
#   It is also the only pattern that shares its key with the provider. The table gives its price.
# * Start from the effect: an overwrite needs no record, and claim_first suits work you may lose.
#   Your own table needs one transaction, and a provider needs your key.
# * Ship the keyed handler with your provider's client, the ledger table and its settings. Run
#   `idem check` on your version, then reconcile on a schedule.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [13 Appendix: the local AWS](13_appendix_the_local_aws.ipynb)
