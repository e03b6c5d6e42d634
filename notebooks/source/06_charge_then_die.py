# %% [markdown]
# # 06 Charge, then die
#
# What closes the gap between the charge and the commit?
#
# **After this chapter you can close the gap between charge and commit with the provider's key, and size a lease.**
#
# Every handler in this workbook does two things in two different systems. It asks the payment
# provider to move money, and it writes down in its own DynamoDB table that it did. No single
# write spans both. Between the provider's "charged" and the record's `done` there is a window,
# and a function can die in it. A timeout while writing the ledger can end it. So can the process
# running out of memory, or a deploy that recycles the container.

# %% [markdown]
# ## Setup

# %%
from idem import views
from idem.core.handlers import common
from idem.core.handlers.keyed import KeyedCharger, KeyedLedger
from idem.core.provider import IdempotencyKeyReused
from idem.core.handlers import keyed
from idem.core.ledger import booked_totals
from idem.lessons.scribes import leases, money
from idem.explore import scenarios as sc
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld

world = LocalWorld()
print(f"bucket {world.bucket}, ledger {world.ledger_table}, provider {world.provider_table}")
print(f"failure queue {world.queue_name}, clock at t={world.clock.t:.0f} s")

# %% [markdown]
# ## The window
#
# The fault point `after_charge` sits right after the provider call, in the charge step all
# handlers share. Money has moved, and nothing on our side knows yet.

# %%
views.show_source(common.charge_step)

# %% [markdown]
# A function can leave that window in two ways:
#
# * It can *raise*: an exception the handler could in principle catch.
# * It can *crash*: the process dies, and no `except` or `finally` runs.
#
# On Lambda both are a function error, and both are retried about a minute later. Here are robust
# (chapter 05) and keyed, each under both:

# %%
window = [sc.run(sc.Scenario(handler, "after_charge", "once", how=how))
          for handler in ("robust", "keyed") for how in ("exception", "crash")]
views.outcome_frame(window, columns=("handler", "how", "charges", "ledger_charges", "invocations",
                                     "in_failure_queue", "record_status", "verdict"))

# %% [markdown]
# Robust charges twice either way. Its retry reads `in_progress`, which is exactly what the record
# should say: the work really did not finish. The trouble is that "not finished" includes "the
# money already moved". You could write a record that says so (`charged`, say). But it would be
# written *after* the charge, so the function can die before writing it too. The window only
# moves. It never closes, because the charge happens in someone else's system.
#
# Keyed charges once, both ways. Look at how.

# %% [markdown]
# ## The whole protocol on one screen
#
# Here is the pattern this chapter builds, in one function you can copy. It runs in this
# workbook's local Lambda like any handler, and the tests judge it by the same runs as chapter
# 05's fix. It makes three calls: a claim, a charge with a key, and a commit.

# %%
from idem.lessons.scribes import protocol

views.show_source(protocol.handle)

# %% [markdown]
# Read it in four steps:
#
# 1. *Claim with a lease.* A conditional put takes the order's record if there is none, or if
#    its holder's lease is over. The lease ends at the invocation's deadline.
# 2. *The loser's three answers*, read from the record that refused it: `done` stands down,
#    `in_progress` fails so that Lambda retries later, anything else waits for a person.
# 3. *Charge with the order's key.* A retry sends the same key, so its charge is the
#    provider's replay of the first. A failed call gives the lease back before it raises.
# 4. *Commit, fenced to the owner.* One `TransactWriteItems` call turns the record `done` and
#    counts the charge: both land, or neither. It lands only while this invocation still owns the
#    record.
#
# The rest of this chapter takes each step apart in the handler to copy, `keyed.py`. It does the
# same four things, with one difference in step 4: its commit is a single conditional put that
# turns the record itself into the ledger line, and no counter is added to. It also reads each
# provider answer by its meaning, keeps `declined` and `needs_attention` records, and logs and
# counts what it did.

# %% [markdown]
# ## Handing the key to the provider
#
# The keyed handler claims the work, and then passes **its own idempotency key** to the provider.
# Its protocol lives in `idem/core/handlers/keyed.py`, the handler to copy, beside small siblings
# it imports (`keyed_orders.py` names the order, chapter 03). Here are the same steps in it: claim
# the order, charge with its key, and commit (the last two in `_charge_and_commit`). Its lease is
# the one above. `WorkInProgress` and `LostOwnership` are the loser's and the zombie's answers.
# The `DECLINED` and `NEEDS_ATTENTION` statuses come with the provider's answers below.

# %%
views.show_source(KeyedCharger.charge_once)

# %% [markdown]
# The line the whole workbook leads to is in `_charge_and_commit`: the call that hands the key to
# the provider. The cell below finds it by name in the handler's files, so what you read is the
# code that runs. Under it is the call in keyed's Stripe client (`keyed_stripe.py`) that passes
# the same key to Stripe. `stripe_key` keeps a key as it is up to Stripe's limit of 255 characters
# ([idempotency](https://docs.stripe.com/idempotency)), and hashes a longer one:

# %%
from idem.core import handlers

views.show_call(handlers, "idempotency_key", callee="charge", prefix="keyed")

# %%
views.show_call(handlers, "idempotency_key", callee="create", prefix="keyed")

# %% [markdown]
# Payment APIs such as Stripe accept an idempotency key for exactly this reason. The workbook's
# provider keeps the same rules:
#
# * A new key creates a charge.
# * The same key with the same parameters returns the first charge and moves no money. That
#   answer is a **replay**.
# * The same key with different parameters is refused: a bug in the caller, or an order
#   changed after it was charged (chapter 03). A person must look.
#
# How the stand-in keeps those rules in its own table is in
# [the appendix](13_appendix_the_local_aws.ipynb#provider-stand-in).

# %% [markdown]
# ## What Stripe receives
#
# In production the provider is Stripe, and each order becomes one **PaymentIntent**: Stripe's
# object for one payment. Here is everything keyed sends to create it, for alice's order A-1001.
# The cell runs keyed on moto, charging through Stripe's own SDK, aimed at a local server that
# keeps Stripe's rules. The table is what that server received:

# %%
views.rows_frame(money.payment_intent_request())

# %% [markdown]
# Read it as three groups:
#
# * *Who pays and how much.* `customer` comes from the account's customer mapping (chapter 03),
#   never from the file. `amount` and `currency` come from the file, within the limits.
# * *How to charge.* `confirm` and `off_session` charge at once, with nobody there to confirm.
#   `payment_method` is the file's, or else the customer's default. Keyed reads the default on
#   the first attempt and keeps it in the record, so every retry sends the same parameters. A
#   default changed between a lost answer and its retry would otherwise make Stripe refuse the
#   key.
# * *What it is for.* The metadata name the order, the upload and the key again. Stripe keeps
#   them with the payment, and the key in them is what a later search finds.

# %% [markdown]
# Run keyed with a crash right after the charge, in this chapter's world, and draw what the run
# recorded:

# %%
crash = sc.Scenario("keyed", "after_charge", "once", how="crash")
crashing = LocalLambda(world, world.env("keyed"), fault=sc.fault_of(crash))
crashing.send(world.event(world.upload(sc.ORDER_KEY)))
crashing.run()
replayed = sc.read_outcome(world, crashing, crash, has_done_state=True)
fig = views.sequence_chart(replayed)

# %% [markdown]
# Follow the arrows down:
#
# * Attempt 1 claims the work and charges: money moves. Then its process dies, before any commit.
# * Lambda retries a minute later, in a new container. Attempt 2 claims the work again, because
#   the first claim's time is over (the next sections explain how).
# * Attempt 2 calls the provider with the same key. The answer is the replay: the first charge,
#   and no money moves.
# * Attempt 2 commits that one charge to your ledger.
#
# The boxes at the bottom are the two ledgers. Yours is protected by the claim and the commit.
# The provider's is protected only by the key you share with it. Read both back:

# %%
for charge in world.provider().charges():
    key = charge.idempotency_key[:32]
    print(f"provider: {charge.id}  {charge.customer}  {charge.amount} cents  key {key}…")
print("your ledger for alice (charges, cents):", world.ledger().entry("alice"))

# %% [markdown]
# Notice that both say one charge of 500 cents: the provider made one, and your ledger booked one.

# %% [markdown]
# ## The provider's side of the story
#
# A key names one request. Sending it again with the same parameters is a retry. Sending it with
# a different amount means two different requests got the same name. The provider refuses rather
# than guess. Ask it directly, with the key the handler used:

# %%
provider = world.provider()
first = provider.charges()[0]
again = provider.charge(customer="alice", amount=500, currency="usd", reference=first.reference,
                        idempotency_key=first.idempotency_key)
print(f"same key, same request: {again.id}, replayed={again.replayed}")
try:
    provider.charge(customer="alice", amount=700, currency="usd", reference=first.reference,
                    idempotency_key=first.idempotency_key)
except IdempotencyKeyReused as refused:
    print(views.fold(f"same key, 700 cents: {type(refused).__name__}: {refused}"))
print("charges at the provider:", len(provider.charges()))

# %% [markdown]
# This is why the key must come from the *work* (chapter 03). It is also why the price must not
# change between attempts: a retry that computes a different amount is refused, loudly, instead
# of charging twice.

# %% [markdown]
# The provider also fails on its own side. Its rules (Stripe's, API v1) say what a retry then
# gets:
#
# * It saves the first answer for a key once the endpoint starts executing, errors included. A 500
#   comes back as the same 500 on every retry.
# * It saves nothing when the request fails validation (a 400 before executing) or conflicts
#   with a request in flight: a key still in flight gets 409. A retry of either runs anew
#   ([idempotency](https://docs.stripe.com/idempotency)).
# * A declined card (402) is saved like any answer: a retry with the key gets the same 402.
#
# Here is keyed against each, the fault on the first attempt only:

# %%
theirs = [sc.run(sc.Scenario("keyed", fault, "once"))
          for fault in ("provider_down", "provider_500", "provider_409", "declined")]
views.outcome_frame(theirs, columns=("fault", "charges", "ledger_charges", "invocations",
                                     "in_failure_queue", "record_status", "verdict"))

# %% [markdown]
# * Down before executing, and 409, are retried a minute later and end exactly once.
# * A saved 500 means the outcome is unknown: the money may or may not have moved, and no retry
#   with that key can learn which ([Stripe](https://docs.stripe.com/api/idempotent_requests):
#   retries with the same key "return the saved response, including `500` errors"). Here it had
#   moved. Keyed marks the record `needs_attention` and fails. Its two retries find that record
#   and fail too, so the event reaches the failure queue with the reason. Keyed does not try a new
#   key: if the first attempt did charge, a new key would charge twice.
# * A **decline** (402) is the card issuer's no to this charge. Keyed ends the work with a
#   `declined` record, and nothing is retried or queued. A retry with the same key would only
#   replay the saved 402.

# %% [markdown]
# A decline is final for its key, not always for the card. Some decline codes say a later attempt
# may pass, such as `try_again_later` or `issuer_not_available`
# ([decline codes](https://docs.stripe.com/declines/codes)). That attempt is a new charge, with a
# new key: a decision for a person, never for a retry.

# %% [markdown]
# Keyed reads each answer by what it means, from Stripe's error type and code, in one function of
# its provider module. There are four meanings: retry later with the same key, a decline, a
# refused secret key, or a person's turn:

# %%
from idem.core.handlers import keyed_stripe

views.show_source(keyed_stripe.meaning_of)

# %% [markdown]
# Read the branches from the top:
#
# * A 401 or a 403 means Stripe refused the secret key: rolled, revoked, or a key without the
#   permission ([errors](https://docs.stripe.com/api/errors)). Keyed fails the
#   invocation and counts it as `auth_failed`. The retry reads the secret key again. The order
#   is never parked for it.
# * A rate limit (429), a lock, a key still in flight (409), a 5xx other than 500,
#   or no answer at all: Lambda retries, with the same key.
# * A card error (402) is a decline.
# * An `idempotency_error`, a saved 500, and any other answer park the order for a person.
#
# The last line also marks one case as *unsent*: a 400 `invalid_request_error` whose body holds
# no PaymentIntent. Stripe refused the request without making a payment, so no money moved. When
# no earlier attempt sent under the key, keyed parks the order with the reason "nothing was
# charged", and a fixed upload of the order takes the record over. Stripe may keep that 400 for
# the key, though, so a fix sent within 24 hours can meet an `idempotency_error`. Keyed parks that
# as nothing charged too, and its reason names the time after which to upload the fix again.

# %% [markdown]
# ## A lease, and a commit fenced to its owner
#
# The key closes the money window. Two more details make keyed safe against copies running at
# the same time, the hole chapter 05 found in robust.
#
# The claim is a conditional put. It records *who* holds the work (`owner`, a fresh token per
# invocation) and *until when* (`lease_until`). A **lease** is such a claim with an end time: after
# it, another copy may take the work over. Keyed's lease ends at the invocation's deadline.

# %% [markdown]
# The first put writes the record only if there is none. When it is refused, DynamoDB returns
# the record that refused it, in the same call. The claim takes that record over, with a second
# conditional put, in three cases. The record is `in_progress` with its lease over, which
# includes a lease its owner gave back after an error. Or a person `released` it (`idem settle`,
# after finding no charge at Stripe). Or it was parked before anything was sent under its key.
# That put lands only if the record still names the owner (and the lease) it read, so of two
# copies trying, only one wins. A refused put that names this very owner is the claim's own put,
# sent again by the AWS SDK after its answer was lost: the claim is won. Every write keyed makes
# to its table is conditional, and goes through one small helper,
# `conditional_write`. It returns `None` when the write lands, and the record that refused it
# (or `{}`) when not. A claim writes no expiry: an `in_progress` record may stand for money
# that moved, so it is never deleted on its own.

# %%
views.show_source(KeyedLedger.claim)

# %% [markdown]
# The commit is one more conditional put, and it lands only if the record is still
# `in_progress` and names this invocation as its owner: an **owner-fenced commit**. It replaces the claim record with the
# **ledger line**, the record of one charge in your books, under the same key:
#
# * `status` becomes `done` (or `pending`, for a charge Stripe is still processing), and the
#   record holds the `result`;
# * the ledger fields are written: `account`, `customer`, `cents`, `currency`, `charge_id`,
#   `booked_at` and `booked_day`. A `pending` line gets no `account` yet, and `booked_day` says
#   `pending` until the charge settles;
# * there is no `expires_at`, so a done record never expires.
#
# Here is its code, without its docstring:

# %%
views.show_code(KeyedLedger.commit)

# %% [markdown]
# A charge is **booked** when it is recorded in your own ledger, and each charge must be booked
# once. There is one record per idempotency key, and the record never expires. A duplicate that
# comes weeks later still finds the `done` record and stands down. The provider makes one charge
# per key only while it remembers the key. The section *When the key grows old*, below, shows
# what keyed does once it may not.
#
# An account's totals are not a counter that each commit adds to. They are read by a query on a
# **sparse index**. A **global secondary index** is a second view of a table, keyed on other
# attributes, that DynamoDB keeps up to date
# ([GSI](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html)). This one,
# `by_account`, is keyed on `account` and `booked_at`. DynamoDB writes an item into an index only
# if the item has the index's key attributes
# ([sparse indexes](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-general-sparse-indexes.html)).
# The customer mapping has an `account` but no `booked_at`, so the index holds only the records
# whose commit wrote the ledger fields.

# %%
views.show_source(booked_totals)

# %% [markdown]
# To see the fence work, make a zombie. A **zombie** is an invocation that lost its lease but
# still runs, and may still try to write. Here the first invocation charges, then stalls for 45 s
# before its commit. Its lease ended at 30 s, its deadline. At the end of the stall a copy of the
# event arrives and finds the lease over. It takes the work over (a new owner), gets the
# provider's replay, and commits. Only then does the first invocation wake up and try to commit:

# %%
with views.folded_output():  # keyed's log lines, wrapped to the page
    zombie = leases.zombie("keyed", pause=45)
print("what the stalled invocation's handler returned:", leases.last_status(zombie, 1, 1))
print(f"charges {zombie.charges}, ledger {zombie.ledger}, record {zombie.record}: {zombie.verdict}")
fig = views.sequence_chart(
    zombie, title="keyed: the first invocation stalls 45 s after its charge; a copy arrives")

# %% [markdown]
# The first line printed is keyed's own log, one JSON object per line as CloudWatch Logs keeps
# it (folded here to fit the page): the stalled invocation's warning that it lost the record.
#
# The zombie's commit was refused (`LostOwnership`), so its handler returned `superseded`. A
# commit is **superseded** when another invocation took the work over and finished it first. The
# copy's commit stands, and one charge moved.

# %% [markdown]
# Lambda would not really let the first invocation run past its 30 s timeout. The runtime marks
# it `timeout` only when the stall ends, at t = 45 s, and retries it a minute later, at t = 105 s.
# On AWS the timeout would stop it at t = 30 s, and the retry would come at about t = 90 s. Either
# way, the retry starts in a fresh environment: Lambda resets one whose invocation timed out
# ([execution environment](https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html)).
# And either way, that retry finds `done`. The stall stands for every way a
# lease can end while its holder still runs:
#
# * a lease set shorter than the timeout;
# * clocks that disagree;
# * a process frozen and thawed.
#
# The fence does not care which.
#
# Slide the stall, and switch to robust. Under 30 s the copy finds a live lease and waits for a
# retry (`WorkInProgress`). From 30 s on it takes over. Robust has neither a lease nor a fence, so
# its copy charges at any stall.

# %% tags=["nbval-ignore-output"]
views.zombie_explorer()

# %% [markdown]
# The same call with the widget's starting values:

# %%
with views.folded_output():
    _ = views.explore_zombie("keyed", 45)

# %% [markdown]
# ## Why the lease ends at the deadline
#
# A lease shorter than the invocation lets a copy take over from a live invocation: the zombie
# above. A lease longer than the invocation does the opposite harm. When the holder crashes, the
# lease outlives it, and the retries find the work "in progress" with nobody doing it.
#
# Keyed ends its lease at the deadline (`context.get_remaining_time_in_millis()`). That is the
# moment Lambda stops the invocation, give or take a fraction of a second. It is right, but it
# makes the **function timeout** the lease.
#
# Here is the same crash after the charge under two timeouts. One is 30 s, the local runtime's.
# The other is 900 s, the 15-minute maximum, a common "just in case" setting. (Lambda's own
# default is 3 s; `template.yaml` chooses 60 s, for a batch of uploads: chapter 10.)

# %%
short = sc.run(sc.Scenario("keyed", "after_charge", "once", how="crash", timeout=30))
long = sc.run(sc.Scenario("keyed", "after_charge", "once", how="crash", timeout=900))
views.outcome_frame([short, long], columns=("handler", "timeout", "charges", "ledger_charges",
                                             "invocations", "in_failure_queue", "record_status",
                                             "verdict"))

# %%
fig = views.lease_timelines(short, long)

# %% [markdown]
# With 30 s, the lease is over long before the retry at t = 60 s, which takes over and finishes.
# With 900 s, the dead invocation's lease covers both retries (t = 60 and 180 s). Each finds a
# live lease and fails with `WorkInProgress`. The event goes to the failure queue with its money
# moved and its ledger line not written. The reason is in the message, read back. (Each scenario
# runs in a fresh local AWS. While this chapter's world holds the names `idem-...`, a fresh one
# takes `idem2-...`: another versioned bucket, with a name of its own.)

# %%
for field, value in long.failures[0]["responsePayload"].items():  # the error Lambda returned
    print(views.fold(f"{field}: {value}"))

# %%
views.items_frame(long.items, hide=("metadata",)).T  # the charge's metadata: shown above

# %% [markdown]
# Nothing is lost. The record is `in_progress` past its lease, and the auditor in chapter 07
# flags that. A redrive after t = 900 s would finish the work with the provider's replay. But a
# crash now costs a person's attention instead of a one-minute retry.
#
# Only a crash waits for the deadline. When keyed *catches* an error, it gives its lease back
# before it raises. Here is an error before the charge, under the same 900 s timeout:

# %%
caught = sc.run(sc.Scenario("keyed", "at_charge", "once", timeout=900))
views.outcome_frame([caught], columns=("handler", "timeout", "charges", "ledger_charges",
                                        "invocations", "in_failure_queue", "record_status",
                                        "verdict"))

# %% [markdown]
# The retry at t = 60 s took the work over at once. Still, set the function timeout close to what
# the work really needs: the lease follows it whenever the process dies.

# %% [markdown]
# ## When the key grows old
#
# Stripe replays a key's first answer only while it remembers the key. It may prune a key once
# the key is at least 24 hours old, and then "We generate a new request if a key is reused after
# the original is pruned" ([idempotency](https://docs.stripe.com/idempotency)). How long a
# provider remembers a key is its **key window**.
#
# An order can outlive it. Say the charge went through, but the commit failed on every try. The
# record stays `in_progress`, and the event goes to the failure queue. A day later the uploader
# sends the same order again. Its event is new, but its key is a day old. So the age that
# matters is the key's, not the event's.

# %% [markdown]
# The claim writes **`first_attempt_at`**: the time of the order's first charge attempt. Every
# takeover keeps it. Once the key is 23 hours old (Stripe's 24 hours minus a margin of one hour),
# keyed searches Stripe before any charge. It searches too when the event itself is 24 hours
# old, or when either age is unknown. It asks for a PaymentIntent whose metadata
# `idempotency_key` is the order's key. One charge found on the order's own terms (amount,
# currency, customer) is booked; one still `processing` is recorded `pending`. Two charges, or one
# on other terms, park the order for a person. Only when none is found does it charge. When the
# search gives no answer (an error, a timeout), keyed parks the order: it never charges blind.
#
# Why a margin of an hour? Stripe's search "can be up to an hour behind during outages"
# ([search](https://docs.stripe.com/api/payment_intents/search)). From 23 h on, the search has
# caught up with every charge made in the first 22 h. The key itself still replays anything
# newer. Here is the look-up, and the age it starts at:

# %%
print(f"keyed searches Stripe once the key is {money.search_from_hours():g} h old")
views.show_source(keyed.look_up)

# %% [markdown]
# Now the story, on the handler, over moto and the local Stripe. Order A-1001 is charged, and
# every attempt dies right after Stripe's answer: the first try and Lambda's two retries. Then the
# same order is uploaded again, 1 h, 22.5 h, 23.5 h or 25 h after its first attempt. Before the
# last, Stripe prunes the key, as it may. Each row is a fresh run:

# %%
views.rows_frame(money.key_age_table(money.key_age_rows()))

# %% [markdown]
# What to notice:
#
# * `first_attempt_at` is 0 s in every row: the two retries took the record over and kept it.
# * Up to 23 h the key does the work. Keyed sends one charge call, and Stripe answers with the
#   first charge: still one PaymentIntent.
# * From 23 h keyed searches first, finds the charge and books it (`found`), with no charge call.
# * At 25 h Stripe had forgotten the key. A charge call would have made a second PaymentIntent.

# %% [markdown]
# ## What the table holds afterwards
#
# This chapter's world, after the crash and the provider experiments, read back from DynamoDB.
# The table holds two items: alice's customer mapping (chapter 03), and the order's record. Each
# is one column, one attribute per row:

# %%
views.items_frame(world.ledger().items(), hide=("metadata",)).T

# %% [markdown]
# Notice what the order's record holds:
#
# * `done`, with the owner of the retry that committed it and the lease that retry held;
# * `first_attempt_at`, the time of the first attempt, kept through the retry's takeover;
# * the result, and the ledger fields of the one charge (`account`, `customer`, `cents`,
#   `currency`, `charge_id`, `booked_at`, `booked_day`);
# * no `expires_at`, so this record turns copies away for good.

# %% [markdown]
# And the failure queue, read back: the crash's retry finished the work, so nothing waits there.

# %%
print("failure queue depth:", world.failure_queue_depth())

# %% [markdown]
# ## Try it
#
# Size a lease for a case this chapter did not run. Your work takes up to 55 s from the claim to
# the commit in the worst case (a slow provider). Keyed's lease is the function timeout. Pick
# `my_timeout` in whole seconds, as Lambda sets it. Keyed must charge once, and book the charge by
# Lambda's first retry, whatever happens: a copy of the event arriving while the work still runs,
# or a crash right after the charge.
#
# Predict first: is there one right timeout, a range of them, or none? The check runs the real
# code twice with yours: a copy arriving 55 s into the work, and a crash after the charge.

# %%
my_timeout = None  # your answer here: seconds

# %%
print(leases.check_lease(my_timeout, work=55))

# %% [markdown]
# <details><summary>Solution</summary>
#
# A range, and a narrow one: 56 to 60 s, for example 58 s (Lambda sets a timeout in whole seconds,
# [timeout](https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html)). Over 55 s,
# the lease is still live when the work ends, so no copy can take it over. Up to 60 s, the lease
# of a crashed invocation is over when the first retry comes. With more than 60 s, the work is
# still safe, but waits for the retry at 180 s, or ends in the failure queue past it. The
# chapter's 30 s is too short here: a copy at 55 s takes over a live invocation.
#
# Five seconds is a thin margin: work that runs a little past its worst case breaks the first
# rule. In practice, shorten the work (a shorter timeout on the provider's call), or choose a
# timeout over 60 s and accept that after a crash the order waits for the second retry, at 180 s
# instead of 60 s.
# </details>
#
# ## Summary
#
# * No record on your side can close the window between the charge and the commit. Passing the
#   same idempotency key to the provider does: the retry's charge becomes a replay of the first.
# * The claim holds a lease for one owner, and the owner-fenced commit turns it into the ledger
#   line. A zombie's commit is superseded, and each charge is booked once.
# * The lease ends at the invocation's deadline. The function timeout therefore decides how long
#   a crash blocks the retries: keep it just above what the work needs. And once an order's key
#   is 23 h old, keyed searches Stripe by the key before it charges.
#
# Every term the workbook defines is in [the glossary](../docs/glossary.md), with the chapter that
# defines it.
#
# **Next:** [07 Time and the auditor](07_time_and_the_auditor.ipynb)
