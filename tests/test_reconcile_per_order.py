"""The reconciliation per order, over all time (issue 39; docs/reliability.md, "The scheduled
reconciliation"), on moto and the loopback Stripe (Stripe's SDK makes the charges; the job reads
them over HTTP as it does in prod):

- two charges of one order are found whatever the time between them (here 25 hours);
- a line's account is compared with its charge's customer (through the account's customer
  mapping, `account#ACCOUNT`), and its amount and currency with the charge's;
- a charge still `processing` is one finding, not two;
- a line booked today (`idem settle`) for a charge made two days before is matched with it.
"""
from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator

import pytest

from idem.core.reconcile import job
from idem.core.dynamo import to_item
from idem.sim.runtime import on_clock
from idem.sim.world import LocalWorld, fake_session

LAG = 27_900  # prod's (idem/core/buffer.py)
DAY = 86_400


class StripeStack:
    """A world, the loopback Stripe, an SDK client on it, and the reconciler's settings."""

    def __init__(self, world: LocalWorld, server: Any, env: dict[str, str]) -> None:
        import stripe

        self.world, self.server, self.env = world, server, env
        self.client = stripe.StripeClient("sk_test_recon", base_addresses={"api": server.url}, max_network_retries=0)

    def customer(self, customer_id: str, payment_method: str = "pm_card_visa") -> str:
        from idem.sim.stripe.server import seed_customer

        return seed_customer(self.server, customer_id=customer_id, payment_method=payment_method)[1]

    def link(self, account: str, customer: str) -> None:
        """The account's customer mapping, as `idem customers link` writes it (BRIEF decision 2)."""
        self.world.dynamodb.put_item(TableName=self.world.ledger_table, Item=to_item({
            "pk": f"account#{account}", "kind": "customer", "account": account, "customer": customer,
            "linked_by": "arn:aws:iam::123456789012:user/ops", "linked_at": int(self.world.clock.now()),
            "reason": "test"}))

    def charge(self, account: str, order_id: str, customer: str, method: str, *, cents: int = 500,
               currency: str = "usd", header_key: str | None = None, key: str | None = None) -> str:
        """A PaymentIntent as the handler makes it: its metadata names the order's key, the order,
        the account and the stack (BRIEF decision 4)."""
        key = key or order_key(self.world.bucket, account, order_id)
        return str(self.client.v1.payment_intents.create(params={
            "amount": cents, "currency": currency, "confirm": True, "off_session": True,
            "customer": customer, "payment_method": method,
            "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
            "metadata": {"idem_stack": "idem-test", "idempotency_key": key, "order_id": order_id,
                         "bucket": self.world.bucket, "key": f"{account}/{order_id}.json",
                         "idem_account": account, "account": customer}},
            options={"idempotency_key": header_key or key}).id)

    def book(self, account: str, order_id: str, charge_id: str, *, cents: int = 500, currency: str = "usd",
             customer: str = "", status: str = "done") -> str:
        """The order's ledger line, as a commit (or `idem settle`) writes it now."""
        key, now = order_key(self.world.bucket, account, order_id), self.world.clock.now()
        booked = ({"booked_at": now, "booked_day": job.day_of(now), "account": account} if status == "done"
                  else {"booked_at": now, "booked_day": "pending"} if status == "pending" else {})
        self.world.dynamodb.put_item(TableName=self.world.ledger_table, Item=to_item({
            "pk": key, "status": status, "cents": cents, "currency": currency, "customer": customer,
            "charge_id": charge_id, "first_attempt_at": now, "result": {"status": status, "charge_id": charge_id},
            **booked}))
        return key

    def run(self, session: Any = None) -> job.WindowReport:
        """The window that holds the world's clock now, judged (as a person's rerun of it: the
        cursor's catching up is test_reconcile_job's)."""
        start = self.world.clock.now() // 3600 * 3600
        return job.rerun(self.env, session or fake_session(), job.iso(start), say=lambda _: None)


def order_key(bucket: str, account: str, order_id: str) -> str:
    """Any stable key per order serves here: the job reads it from the charge's metadata."""
    return f"charge#order#{account}#{order_id}"


@pytest.fixture
def stack() -> Iterator[StripeStack]:
    with stripe_stack() as made:
        yield made


@contextlib.contextmanager
def stripe_stack() -> Iterator[StripeStack]:
    from idem.sim.stripe.server import loopback_stripe

    with LocalWorld(prefix="reconcile-order") as world, loopback_stripe(world) as server:
        reports = f"{world.prefix}-reports"
        world.s3.create_bucket(Bucket=reports)
        ssm = world.session.client("ssm")
        ssm.put_parameter(Name="/recon-order/stripe", Value="sk_test_recon", Type="SecureString")
        env = {"LEDGER_TABLE": world.ledger_table, "REPORT_BUCKET": reports, "WINDOW_MINUTES": "60",
               "STRIPE_SECRET_PARAMETER": "/recon-order/stripe", "STRIPE_API_BASE": server.url,
               "STACK_NAME": "idem-test", "RECONCILE_LAG_SECONDS": str(LAG)}
        try:
            yield StripeStack(world, server, env)
        finally:
            ssm.delete_parameter(Name="/recon-order/stripe")
            for item in world.s3.list_objects_v2(Bucket=reports).get("Contents", []):
                world.s3.delete_object(Bucket=reports, Key=item["Key"])
            world.s3.delete_bucket(Bucket=reports)


def kinds(report: job.WindowReport) -> list[tuple[str, str]]:
    return [(f.kind, f.what) for f in report.findings]


# -- 1. two charges of one order, however far apart ----------------------------------------------------
def test_two_charges_of_one_order_25_hours_apart_are_found_as_a_double(stack):
    method = stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    first = stack.charge("alice", "A-1001", "cus_alice", method)
    stack.book("alice", "A-1001", first, customer="cus_alice")
    stack.run()  # its own window: clean
    stack.world.clock.advance(25 * 3600)  # Stripe forgot the key (24 h): the same order charged again
    second = stack.charge("alice", "A-1001", "cus_alice", method, header_key="charge#order#alice#A-1001#again")
    report = stack.run()
    assert kinds(report) == [("double", second)]
    (double,) = report.findings
    assert double.command == f"python -m idem refund --stack idem-test --charge {second}"
    assert first in double.detail


def test_one_order_id_in_two_accounts_is_two_orders_not_a_double(stack):
    method = stack.customer("cus_alice")
    bob = stack.customer("cus_bob")
    stack.link("alice", "cus_alice")
    stack.link("bob", "cus_bob")
    stack.book("alice", "1001", stack.charge("alice", "1001", "cus_alice", method), customer="cus_alice")
    stack.book("bob", "1001", stack.charge("bob", "1001", "cus_bob", bob), customer="cus_bob")
    assert stack.run().findings == []


def test_the_orders_of_a_window_are_looked_up_ten_to_a_search():
    asked: list[str] = []

    def fetch(request: Any) -> dict[str, Any]:
        import urllib.parse

        asked.append(urllib.parse.parse_qs(urllib.parse.urlparse(request.full_url).query)["query"][0])
        return {"data": [], "has_more": False}

    seen = [job.Entry(f"pi_{n}", "alice", 500, 0.0, key=f"charge#order#{n}") for n in range(23)]
    job.order_charges("sk_test", "shop", seen, fetch)
    # 23 orders: 10 + 10 + 3 clauses, joined by OR (Stripe allows no AND in the same query)
    assert sorted(query.count(" OR ") + 1 for query in asked) == [3, 10, 10]  # up to 4 at once
    clauses = sorted(clause for query in asked for clause in query.split(" OR "))
    assert clauses == sorted(f"metadata['idempotency_key']:'charge#order#{n}'" for n in range(23))


def test_searches_are_paced_under_stripes_search_rate_limit_across_threads():
    now, slept = [100.0], []

    def sleep(seconds: float) -> None:
        slept.append(round(seconds, 4))

    pace = job.Pace(16, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        pace.wait()  # three searches asked at one moment: the 2nd waits 1/16 s, the 3rd 2/16 s
    assert slept == [0.0625, 0.125]
    now[0] += 10
    pace.wait()  # later, its turn has come
    assert slept == [0.0625, 0.125]
    assert job.SEARCHES_PER_SECOND < 20  # https://docs.stripe.com/rate-limits: Search, 20 reads a second


def test_a_quote_in_a_stack_name_or_an_order_key_is_escaped_in_the_query():
    assert job.stripe_query("o'neil", 0, 1) == "metadata['idem_stack']:'o\\'neil' AND created>=0 AND created<1"
    assert job.orders_query(["a'b"]) == "metadata['idempotency_key']:'a\\'b'"


# -- 2. the line's account, amount and currency against the charge --------------------------------------
def test_a_line_whose_account_maps_to_another_customer_than_its_charge_is_a_finding(stack):
    alice = stack.customer("cus_alice")
    stack.customer("cus_bob")
    stack.link("alice", "cus_alice")
    stack.link("bob", "cus_bob")
    charged = stack.charge("bob", "B-7", "cus_alice", alice)  # bob's order, charged to Alice
    stack.book("bob", "B-7", charged, customer="cus_alice")
    report = stack.run()
    assert kinds(report) == [("account", charged)]
    (finding,) = report.findings
    assert "cus_bob" in finding.detail and "cus_alice" in finding.detail
    assert finding.command == f"python -m idem refund --stack idem-test --charge {charged}"


def test_a_line_whose_account_has_no_customer_mapping_is_a_finding(stack):
    alice = stack.customer("cus_alice")
    charged = stack.charge("alice", "A-2", "cus_alice", alice)
    stack.book("alice", "A-2", charged, customer="cus_alice")
    report = stack.run()
    assert kinds(report) == [("account", charged)]
    assert "no linked customer" in report.findings[0].detail


def test_a_line_and_its_charge_in_other_currencies_is_a_finding(stack):
    alice = stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    charged = stack.charge("alice", "A-3", "cus_alice", alice, cents=500, currency="eur")
    stack.book("alice", "A-3", charged, cents=500, currency="usd", customer="cus_alice")
    report = stack.run()
    assert kinds(report) == [("amount", charged)]
    assert "usd" in report.findings[0].detail and "eur" in report.findings[0].detail


# -- 3. a charge still processing: one finding -----------------------------------------------------------
def test_a_charge_still_processing_is_one_pending_finding_not_also_unbooked(stack):
    world = stack.world
    method = stack.customer("cus_gina", payment_method="us_bank_account")  # settles later: processing
    stack.link("gina", "cus_gina")
    with on_clock(world.clock):
        upload = world.upload("gina/G-6.json", json.dumps({"order_id": "G-6", "amount_cents": 500}).encode())
    seen = job.UploadSeen(world.bucket, upload.key, upload.version_id, upload.etag, 0)
    key = job.order_key(world.s3, seen)
    charged = stack.charge("gina", "G-6", "cus_gina", method, key=key)
    assert stack.client.v1.payment_intents.retrieve(charged).status == "processing"
    world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({  # as keyed books a processing charge
        "pk": key, "status": "pending", "charge_id": charged, "cents": 500,
        "result": {"status": "pending", "charge_id": charged, "amount_cents": 500}}))
    stack.env["UPLOAD_BUCKET"] = world.bucket
    report = stack.run()
    assert [f.kind for f in report.findings] == ["pending"]
    assert report.unbooked == [] and charged in report.findings[0].detail


def test_a_processing_charge_with_no_upload_in_the_window_is_pending_not_unbooked(stack):
    method = stack.customer("cus_gina", payment_method="us_bank_account")
    stack.link("gina", "cus_gina")
    charged = stack.charge("gina", "G-7", "cus_gina", method)
    report = stack.run()
    assert kinds(report) == [("pending", charged)]
    assert report.unbooked == []


# -- 4. a line booked today for an older charge -----------------------------------------------------------
def test_a_charge_made_two_days_before_and_booked_today_by_settle_is_matched_not_uncharged(stack):
    alice = stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    charged = stack.charge("alice", "A-4", "cus_alice", alice)  # its commit never landed
    stack.world.clock.advance(2 * DAY)
    stack.book("alice", "A-4", charged, customer="cus_alice")  # `idem settle --key` books it today
    before = len(stack.server.requests)
    report = stack.run()
    assert report.findings == [], report.render()
    assert report.ledger_lines == 1
    paths = [path for _, path in stack.server.requests[before:]]
    assert paths.count("/v1/payment_intents/search") == 2  # the window's charges, then its orders' by key
    assert f"/v1/payment_intents/{charged}" not in paths  # found by its order's key: no retrieve


def test_a_line_for_an_older_charge_with_no_order_key_is_matched_by_retrieving_it(stack):
    alice = stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    charged = str(stack.client.v1.payment_intents.create(params={  # made by other code: no order key
        "amount": 500, "currency": "usd", "confirm": True, "off_session": True, "customer": "cus_alice",
        "payment_method": alice, "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
        "metadata": {"idem_stack": "idem-test"}}).id)
    stack.world.clock.advance(2 * DAY)
    stack.book("alice", "A-9", charged, customer="cus_alice")
    before = len(stack.server.requests)
    assert stack.run().findings == []
    assert f"/v1/payment_intents/{charged}" in [path for _, path in stack.server.requests[before:]]


def test_a_line_booked_today_for_an_older_charge_still_compares_its_amount(stack):
    alice = stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    charged = stack.charge("alice", "A-5", "cus_alice", alice, cents=700)
    stack.world.clock.advance(2 * DAY)
    stack.book("alice", "A-5", charged, cents=500, customer="cus_alice")
    assert kinds(stack.run()) == [("amount", charged)]


def test_a_line_for_a_charge_stripe_does_not_have_is_uncharged(stack):
    stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    stack.book("alice", "A-6", "pi_unknown000001", customer="cus_alice")
    report = stack.run()
    assert kinds(report) == [("uncharged", "pi_unknown000001")]


# -- the README's table: one name and one command per finding --------------------------------------------
def test_the_readme_names_each_finding_once_with_the_command_the_report_gives():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme[readme.index("| Finding | It means | Settle with |"):].split("\n\n")[0].splitlines()[2:]
    rows = {row.split("|")[1].strip().strip("`"): row.split("|")[3].strip().strip("`") for row in table}
    assert len(rows) == len(table) and set(rows) == set(job.KINDS)

    def entry(charge_id: str, at: float, key: str, cents: int = 500, customer: str = "cus_alice",
              status: str = "succeeded") -> job.Entry:
        return job.Entry(charge_id, "alice", cents, at, key=key, customer=customer, status=status)

    upload = job.UploadSeen("b", "alice/1.json", "v1", "e", 10.0)
    statuses = {"k-missing": ("", {}), "k-held": ("needs_attention", {"reason": "why"})}
    lines = [entry("pi_gone", 10, "k-gone"), entry("pi_amount", 11, "k-amount"), entry("pi_who", 12, "k-who")]
    charges = [entry("pi_amount", 5, "k-amount", cents=700), entry("pi_who", 6, "k-who", customer="cus_bob"),
               entry("pi_loose", 20, "k-loose"), entry("pi_1", 1, "k-twice"), entry("pi_2", 30, "k-twice"),
               entry("pi_wait", 40, "k-wait", status="processing")]
    report = job.compare(lines, charges, 0, 3600, [(upload, "k-missing"), (upload, "k-held")],
                         status_of=lambda key: statuses.get(key, ("", {})), customer_of=lambda account: "cus_alice")
    from idem.core.reconcile.refunds import refund_findings

    report.findings += refund_findings(  # a refund the ledger does not book (job.reconcile_window adds these)
        [{"id": "re_1", "payment_intent": "pi_back", "amount": 200, "created": 50, "status": "succeeded"}],
        lambda pis: {}, lambda pi: 200, lambda pi: {"id": pi, "amount": 500, "currency": "usd",
                                                    "metadata": {"idem_stack": "s"}}, "s")
    given = {f.kind: f.command for f in report.findings}
    assert set(given) == set(job.KINDS), report.render()
    for kind, command in given.items():  # the README's command is the report's, without the key or id
        assert command.split(" --")[0] + " --" + command.split(" --")[1].split()[0] == rows[kind].rsplit(" ", 1)[0]


def test_an_order_whose_record_is_pending_and_whose_charge_has_settled_is_one_finding():
    """The record still says pending, Stripe says succeeded, no line yet: `idem settle --key`
    books it; one finding for the order, not also `unbooked`."""
    upload = job.UploadSeen("b", "gina/G-8.json", "v1", "e", 10.0)
    charge = job.Entry("pi_8", "gina", 500, 20.0, key="k-8", status="succeeded")
    report = job.compare([], [charge], 0, 3600, [(upload, "k-8")],
                         status_of=lambda key: ("pending", {"charge_id": "pi_8"}))
    assert [f.kind for f in report.findings] == ["pending"] and report.unbooked == []


def test_a_charge_naming_another_account_than_its_line_is_an_account_finding():
    """Both accounts map to one customer (a family's two accounts): the customer matches, but the
    charge's metadata says it was bob's order while the books say alice's."""
    line = job.Entry("pi_1", "alice", 500, 10.0, key="k-1", currency="usd")
    charge = job.Entry("pi_1", "bob", 500, 5.0, key="k-1", customer="cus_family", currency="usd", status="succeeded")
    report = job.compare([line], [charge], 0, 3600, customer_of=lambda account: "cus_family")
    assert [(f.kind, f.what) for f in report.findings] == [("account", "pi_1")]
    assert "names account bob" in report.findings[0].detail
