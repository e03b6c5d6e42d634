"""The handler runs in Lambda's environment: its folder first on sys.path, Lambda's reserved
variables set, `--env` on top; Stripe's SDK called directly goes to the loopback Stripe."""
from __future__ import annotations

import json
import sys

import pytest

from idem.explore.judge.verdicts import BREAKS

from check_cli import FAST, HANDLERS, cli, target
from idem.explore.target import lambda_env
from idem.explore.sandbox import stripe_sdk



def test_lambdas_reserved_variables_are_set_from_the_target():
    root = str(HANDLERS)
    env = lambda_env.environment(target("aws_region_reader"), root, given={"AWS_REGION": "eu-west-1"})
    assert env["_HANDLER"] == "aws_region_reader.lambda_handler"
    assert env["LAMBDA_TASK_ROOT"] == root and env["LAMBDA_RUNTIME_DIR"] == "/var/runtime"
    assert env["AWS_EXECUTION_ENV"] == f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}"
    assert env["AWS_DEFAULT_REGION"] == "us-east-1" and env["AWS_REGION"] == "eu-west-1"  # --env on top
    assert {"AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION",
            "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME", "TZ"} <= set(env)
    assert lambda_env.handler_setting("orders.app:handle") == "orders.app.handle"


def past_key_window_only(report: dict) -> bool:
    """Every break is an order sent again past Stripe's 24-hour key window (idem/explore/families/timed.py): a
    handler whose only guard is Stripe's key charges again there."""
    broken = [r["schedule"] for r in report["results"] if r["verdict"] in BREAKS]
    return bool(broken) and all(map(_past, broken))


def _past(schedule: str) -> bool:
    return "Stripe's 24-hour key window" in schedule or "(3 days later)" in schedule


@pytest.mark.parametrize("name", ["aws_region_reader", "split/app"])
def test_a_handler_reading_lambdas_variables_or_importing_its_own_package_runs_and_holds(name):
    code, out, err = cli(target(name), *FAST)
    assert code == 0, out + err
    assert "holds" in out


def test_the_split_package_is_found_from_anywhere(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # not the handler's folder: Lambda's task root is the function's own
    code, out, err = cli(target("split/app"), *FAST, "--json")
    assert code == 0, err
    assert json.loads(out)["holds"]


def test_a_handler_importing_stripe_is_found_and_aimed_at_the_loopback():
    assert stripe_sdk.uses_stripe(target("stripe_direct"))
    assert stripe_sdk.uses_stripe(target("stripe_client_no_key"))
    assert not stripe_sdk.uses_stripe(target("keyed_books"))
    assert not stripe_sdk.uses_stripe("idem.core.handlers.keyed:lambda_handler")  # its adapter's import is not its own


def test_a_stripe_client_handler_without_a_key_runs_and_its_double_charge_is_found():
    code, out, err = cli(target("stripe_client_no_key"), *FAST, "--json")
    assert code == 1, err  # not 3 ("called api.stripe.com"): the SDK went to the loopback Stripe
    report = json.loads(out)
    assert report["baseline"]["provider:charge"] == 1  # the SDK's charge landed where charges are counted
    assert report["verdicts"].get("double_charge", 0) > 0


def test_a_helper_module_s_memory_does_not_outlive_its_execution_environment():
    # its helper remembers each order's random key in a module-level dict: a retry in a new
    # environment makes a new key. With one copy of the helper shared by every environment, the
    # key was remembered everywhere and the check said "holds" (exit 0) for a double charge.
    code, out, err = cli(target("split_memory/app"), "--retries", "1", "--workers", "1", "--json")
    assert code == 1, out + err
    doubles = [r["schedule"] for r in json.loads(out)["results"] if r["verdict"] == "double_charge"]
    assert any(s.startswith("crash after provider:charge") for s in doubles)
    assert any("a copy starts" in s for s in doubles)  # a second environment at the same time


@pytest.mark.parametrize("trigger", ["s3", "sqs"])
def test_a_module_imported_at_a_later_call_is_its_execution_environment_s_own(trigger, monkeypatch):
    # split/lazy_app imports its parser at the first call; the parser hands back a class of a helper
    # the entry point imported at its start, checked with isinstance. With the first environment's
    # parser kept for the next, every Upload failed that check from the second environment on:
    # every schedule failed visibly, and the report said "holds" with nothing charged.
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults,runs")
    code, out, err = cli(target("split/lazy_app"), *FAST, "--trigger", trigger, "--json")
    assert code == 0, out + err
    report = json.loads(out)
    clean = [r for r in report["results"] if r["schedule"].startswith("no fault")]
    assert clean and all(r["verdict"] == "exactly_once" for r in clean), clean
    if trigger == "s3":  # split/app, which imports the same parsing at its start, is judged alike
        code, out, err = cli(target("split/app"), *FAST, "--json")
        assert json.loads(out)["verdicts"] == report["verdicts"], out + err
    else:  # no fault but the schedules' own: failing a message takes a fault with retries 0
        failed = [r for r in report["results"] if r["verdict"] == "failed_visibly"]
        assert len(failed) < len(report["results"]) // 10, report["verdicts"]


def test_each_environment_keeps_its_own_copy_of_a_module_its_calls_import(tmp_path, monkeypatch):
    import sys

    from idem.sim.runtime import cold_start

    (tmp_path / "later.py").write_text("import helper\nseen = helper.made\n")
    (tmp_path / "helper.py").write_text("made = []\n")
    (tmp_path / "app.py").write_text("import helper\ndef handle():\n    import later\n    return later\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("helper", "later"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    first, second = (cold_start.Container(name, str(tmp_path / "app.py")) for name in ("c1", "c2"))
    with first.running():
        first_later = first.module.handle()
    with second.running():
        second_later = second.module.handle()
    with first.running():
        assert first.module.handle() is first_later  # imported once in its environment, then kept
    assert first_later is not second_later  # each environment imports it afresh
    assert first_later.seen is first.module.helper.made and second_later.seen is second.module.helper.made
    assert "later" not in sys.modules and "helper" not in sys.modules  # none left behind for the next


def test_a_cold_start_imports_the_function_s_own_modules_afresh_and_no_one_else_s(tmp_path, monkeypatch):
    import sys

    from idem.sim.runtime import cold_start

    (tmp_path / "helper.py").write_text("made = []\n")
    (tmp_path / "app.py").write_text("import helper\nimport json\nhelper.made.append(1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "helper", raising=False)
    first = cold_start._load_fresh(str(tmp_path / "app.py"))
    second = cold_start._load_fresh(str(tmp_path / "app.py"))
    assert first.helper is not second.helper and second.helper.made == [1]  # a fresh helper, as Lambda's
    assert first.json is second.json  # the standard library (an installed package too) is shared
    keyed = cold_start._load_fresh("idem.core.handlers.keyed")
    from idem.core.handlers import keyed_settings
    assert keyed.ConfigError is keyed_settings.ConfigError  # the workbook's own helpers: one copy


def test_a_stripe_sdk_direct_handler_runs_and_its_charges_land():
    code, out, err = cli(target("stripe_direct"), *FAST, "--json")
    report = json.loads(out)  # it runs (never 3 for calling api.stripe.com), and holds but past Stripe's key window
    assert code == 1 and past_key_window_only(report), out + err
    assert report["baseline"]["provider:charge"] == 1 and report["baseline"]["books:line"] == 1
    # keyed by the order, every schedule holds: the uploader's retried PUT, and a second order at
    # the same name, whose charge is put on the upload whose invocation sent it
    assert any("retried PUT" in r["schedule"] for r in report["results"])
    assert any("a second order at the same name" in r["schedule"] for r in report["results"])
    assert all(r["verdict"] not in ("double_charge", "silent_loss") for r in report["results"]
               if not _past(r["schedule"]))


@pytest.fixture(scope="module")
def stripe_direct_retried() -> tuple[int, str, str]:
    """One check of stripe_direct with a retry, read by the two tests below (each asks its own question)."""
    return cli(target("stripe_direct"), "--retries", "1", "--workers", "1", "--json")


def test_a_stripe_sdk_direct_handler_holds_with_two_uploads_of_one_name(stripe_direct_retried):
    code, out, err = stripe_direct_retried
    assert code == 1 and past_key_window_only(json.loads(out)), out + err
    second_orders = [r for r in json.loads(out)["results"] if "a second order at the same name" in r["schedule"]]
    assert second_orders and all(r["verdict"] not in ("double_charge", "silent_loss") for r in second_orders)
    # two orders, one charge and one ledger line each (it was "upload 1: 2 charges; upload 2: none");
    # unversioned, the first order may be gone before it is read, and a 1,024-byte name makes a
    # reference longer than Stripe's 500-character metadata value: both fail visibly
    both = [r for r in second_orders if r["schedule"].startswith("no fault") and r["verdict"] == "exactly_once"]
    assert len(both) >= 8 and all(r["effects"] == {"provider:charge": 2, "books:line": 2} for r in both)
    assert any("(new version), after the first is done" in r["schedule"] for r in both)


def test_the_provider_s_faults_reach_a_charge_sent_with_stripe_s_sdk_directly(stripe_direct_retried):
    code, out, err = stripe_direct_retried
    # it holds through every provider fault; it breaks only past Stripe's key window (its only guard there)
    assert code == 1 and past_key_window_only(json.loads(out)), out + err
    schedules = [r["schedule"] for r in json.loads(out)["results"]]
    # the SDK's PaymentIntent create is the provider:charge boundary: failed on either side of it,
    # and answered by the provider with each of its outcomes
    assert any(s.startswith("crash after provider:charge") for s in schedules)
    assert any(s.startswith("exception before provider:charge") for s in schedules)
    for outcome in ("provider_down", "provider_500", "provider_409", "declined"):
        assert any(s.startswith(f"the provider answers {outcome} before provider:charge") for s in schedules), outcome


def test_a_lost_answer_after_a_charge_sent_with_stripe_s_sdk_is_found_as_a_double_charge():
    code, out, err = cli(target("stripe_client_no_key"), "--retries", "1", "--workers", "1", "--json")
    assert code == 1, out + err
    doubles = [r["schedule"] for r in json.loads(out)["results"] if r["verdict"] == "double_charge"]
    # no key: the retry after the lost answer charges again, and the check says where
    assert any(s.startswith("exception after provider:charge") for s in doubles)
    assert any(s.startswith("crash after provider:charge") for s in doubles)


def test_the_pytest_fixture_gives_lambdas_environment_too(idem_check):
    report = idem_check(target("aws_region_reader"), retries=(0,), workers=1)
    assert report.holds and report.target.env  # AWS_REGION and the rest, as the CLI gives them
    assert dict(report.target.env)["_HANDLER"] == "aws_region_reader.lambda_handler"


def test_a_decline_sent_with_stripe_s_sdk_under_sqs_is_that_order_s_final_answer():
    # without the decline noted for its order, a decline the handler rightly does not retry
    # read as an order lost with nothing in any queue (silent_loss, 20 schedules)
    code, out, err = cli(target("stripe_direct_sqs"), "--trigger", "sqs", "--retries", "0", "--json")
    assert code == 0, out + err
    verdicts = json.loads(out)["verdicts"]
    assert verdicts.get("declined", 0) > 0 and "silent_loss" not in verdicts


def test_the_pytest_fixture_checks_a_stripe_sdk_handler_and_leaves_the_sdk_as_it_was(idem_check):
    import stripe

    base, client = stripe.api_base, stripe.default_http_client
    # stripe_direct breaks past Stripe's key window (above); its twin that claims the order first holds
    report = idem_check(target("stripe_direct_claimed"), retries=(0,), workers=1)  # found, as the CLI finds it
    assert report.holds and report.target.provider == "stripe"
    assert any(r.schedule.fault and r.schedule.fault.outcome for r in report.results)  # provider faults ran
    assert (stripe.api_base, stripe.default_http_client) == (base, client)  # aimed back afterwards
    assert stripe_sdk._aimed == [] and stripe_sdk._serving == []  # a StripeClient made now is not aimed
