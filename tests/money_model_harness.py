"""The world tests/test_money_model.py drives: moto, the loopback Stripe (Stripe's SDK over HTTP),
the handler to copy called in this process as Lambda calls it (its own boto3 clients, its env, a
virtual clock through time-machine, a cold start that imports its modules afresh), and faults at
its calls. Everything the handler is asked of is in test_money_model.py's INTERFACE block; this
module only plays AWS, Stripe and Lambda around it, and reads back what the contract talks about:
Stripe's PaymentIntents and the ledger's lines."""
from __future__ import annotations

import contextlib
import functools
import importlib
import io
import json
import os
import sys
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

import boto3
import stripe._http_client
import time_machine
from botocore.exceptions import ReadTimeoutError

from idem.core.clock import VirtualClock
from idem.core.dynamo import from_item, to_item
from idem.core.provider import MemoryStore, Provider
from idem.sim.runtime import LambdaContext
from idem.sim.stripe.keys import expire_api_key, prune_idempotency_keys
from idem.sim.stripe.account import StripeAccount
from idem.sim.stripe.server import StripeServer, seed_customer
from idem.sim.world import REGION, LocalWorld, fake_client

#: Faults at an AWS call of one invocation: the call refused (a 500, nothing written), or its
#: answer lost after DynamoDB or S3 did it (the SDK's retries used up: the caller sees a timeout).
AWS_FAULTS = ("refused", "answer_lost")


@dataclass
class AwsFaultPlan:
    """One fault, at the `nth` AWS call the handler makes in the next invocation."""

    nth: int
    kind: str
    calls: list[str] = field(default_factory=list)  # "dynamodb.PutItem", ... in the order made
    fired: str = ""  # the call it hit, once it has
    _losing: bool = False


class FaultySession:
    """The boto3 session the handler's clients come from: every call passes through `before`
    and `after`, which play the armed fault (botocore's before-call / after-call events)."""

    def __init__(self) -> None:
        self.session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                     region_name=REGION)
        self.plan: AwsFaultPlan | None = None
        self.session.events.register("before-call", self.before)
        self.session.events.register("after-call", self.after)

    def before(self, event_name: str = "", **_: Any) -> Any:
        plan = self.plan
        if plan is None:
            return None
        call = event_name.split(".", 1)[1]
        plan.calls.append(call)
        if len(plan.calls) != plan.nth or plan.fired:
            return None
        plan.fired = f"{plan.kind} at {call}"
        if plan.kind == "refused":
            return (SimpleNamespace(status_code=500, headers={}),
                    {"Error": {"Code": "InternalServerError", "Message": "the model refused this call"},
                     "ResponseMetadata": {"HTTPStatusCode": 500}})
        plan._losing = True
        return None

    def after(self, http_response: Any = None, **_: Any) -> None:
        plan = self.plan
        if plan is not None and plan._losing:
            plan._losing = False
            if getattr(http_response, "status_code", 500) < 300:  # done, and the answer never arrives
                raise ReadTimeoutError(endpoint_url="https://model.invalid/")


@dataclass
class Invocation:
    """What one invocation returned or raised, and the needs_attention its EMF document counted."""

    result: Any
    raised: BaseException | None
    needs_attention: int
    stdout: str


@functools.cache
def stage() -> tuple[LocalWorld, StripeServer]:
    """One moto world and one loopback Stripe for the whole process (each sequence resets them:
    creating tables and stopping a server cost more than a short sequence)."""
    world = LocalWorld(prefix="money", provider_in_memory=True, link_customers=False)  # the model links accounts itself
    return world, StripeServer(world.provider()).start()


class Bench:
    """One sequence's world: an empty ledger table, a new Stripe account on a new virtual clock,
    the handler's container (a cold start)."""

    def __init__(self, module: str, env: Callable[[LocalWorld, StripeServer, str], dict[str, str]],
                 secret_parameter: str, faulty: FaultySession) -> None:
        self.module_name, self.secret_parameter, self.faulty = module, secret_parameter, faulty
        self._stack = contextlib.ExitStack()
        self.world, self.server = stage()
        self.clock = self.world.clock = VirtualClock()
        self.world.provider_store = MemoryStore()
        # keys live until the model prunes them (retention None): Stripe *may* prune from 24 h on
        stand_in = Provider(self.world.dynamodb, self.world.provider_table, self.clock, retention_seconds=None,
                            store=self.world.provider_store)
        self.server.account, self.server.requests = StripeAccount(stand_in), []
        self._empty_ledger()
        self.ssm = fake_client("ssm")
        self.secret_number, self.restricted = 1, False
        self.ssm.put_parameter(Name=secret_parameter, Value=self.secret, Type="SecureString", Overwrite=True)
        self.env = env(self.world, self.server, secret_parameter)
        self.handler: ModuleType | None = None
        self.invocations = 0
        saved_sleep = stripe._http_client.HTTPClient._sleep_time_seconds  # the SDK's retries: no real sleep
        stripe._http_client.HTTPClient._sleep_time_seconds = lambda self, n, response=None: 0.0  # type: ignore
        self._stack.callback(setattr, stripe._http_client.HTTPClient, "_sleep_time_seconds", saved_sleep)

    @property
    def secret(self) -> str:
        return f"{'rk' if self.restricted else 'sk'}_test_model_{self.secret_number}"

    def close(self) -> None:
        self._stack.close()

    # -- Lambda's side ---------------------------------------------------------------------------
    def cold_start(self) -> None:
        """A new container: the handler's modules imported afresh (every module-level cache gone),
        at its next invocation (Lambda's Init phase)."""
        self.handler = None

    def _init_phase(self) -> ModuleType:
        """The handler and its siblings (HANDLER_MODULE*) imported afresh, as Lambda's Init phase runs
        them in a new environment; the copies the rest of the process imported are put back after,
        so that no other test meets a second copy of a class (an exception told by its class)."""
        parent_name, _, _ = self.module_name.rpartition(".")
        parent = sys.modules.get(parent_name)
        mine = [n for n in sys.modules if n.startswith(self.module_name)]
        saved = {n: sys.modules.pop(n) for n in mine}
        saved_attrs = {n: getattr(parent, n.rpartition(".")[2], None) for n in saved} if parent else {}
        try:
            return importlib.import_module(self.module_name)
        finally:
            for name in [n for n in sys.modules if n.startswith(self.module_name)]:
                del sys.modules[name]
            sys.modules.update(saved)
            for name, module in saved_attrs.items():
                if module is not None:
                    setattr(parent, name.rpartition(".")[2], module)

    def invoke(self, event: dict[str, Any], fault: AwsFaultPlan | None = None, metric: str = "needs_attention") -> Invocation:
        """The handler on one event, as Lambda calls it: its env, boto3's default session (ours,
        with the fault), time.time on the virtual clock, stdout captured (its log lines and EMF)."""
        if self.handler is None:
            self.handler = self._init_phase()
        self.invocations += 1
        context = LambdaContext(f"req-{self.invocations:04d}", "charge", self.clock.now() + 30, self.clock)
        out, result, raised = io.StringIO(), None, None
        saved_env = {name: os.environ.get(name) for name in self.env}
        saved_session, self.faulty.plan = boto3.DEFAULT_SESSION, fault
        os.environ.update(self.env)
        boto3.DEFAULT_SESSION = self.faulty.session
        try:
            with time_machine.travel(self.clock.now(), tick=False), contextlib.redirect_stdout(out):
                result = self.handler.lambda_handler(json.loads(json.dumps(event)), context)
        except Exception as error:  # the invocation failed: Lambda retries it, then the failure queue
            raised = error
        finally:
            boto3.DEFAULT_SESSION, self.faulty.plan = saved_session, None
            for name, value in saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        return Invocation(result, raised, emf_count(out.getvalue(), metric), out.getvalue())

    # -- Stripe's side ----------------------------------------------------------------------------
    def seed(self, customer: str) -> None:
        seed_customer(self.server, customer_id=customer)

    def change_default_card(self, customer: str) -> None:
        account = self.server.account
        method = account.attach("test", "pm_card_mastercard", customer)
        account.modes["test"].customers[customer]["invoice_settings"]["default_payment_method"] = method["id"]

    def rotate_secret(self) -> None:
        """A new secret key in SSM, and the old one expired at Stripe at once (rolled "now")."""
        old = self.secret
        self.secret_number += 1
        self.ssm.put_parameter(Name=self.secret_parameter, Value=self.secret, Type="SecureString", Overwrite=True)
        expire_api_key(self.server.account, old)

    def restrict_secret(self, permissions: set[str]) -> None:
        """A restricted key (rk_) in SSM with only these permissions, the old key expired at once."""
        old = self.secret
        self.secret_number += 1
        self.restricted = True
        self.server.account.restrict(self.secret, permissions)
        self.ssm.put_parameter(Name=self.secret_parameter, Value=self.secret, Type="SecureString", Overwrite=True)
        expire_api_key(self.server.account, old)

    def grant_all(self) -> None:
        """A person gives the restricted key what the handler needs (or nothing to do for a secret key)."""
        if self.restricted:
            self.server.account.restrict(self.secret, {"customers:read", "payment_intents:write"})

    def prune_keys(self) -> int:
        return prune_idempotency_keys(self.server.account)

    def stripe_fault(self, name: str, method: str, path: str) -> None:
        self.server.account.inject(name, method=method, path=path)

    def stripe_faults_pending(self) -> list[str]:
        return self.server.account.pending()

    def clear_stripe_faults(self) -> None:
        with self.server.account._lock:
            self.server.account._script.clear()

    def succeeded_intents(self) -> list[dict[str, Any]]:
        return [i for i in self.server.account.intents() if i["status"] in ("succeeded", "requires_capture")]

    # -- DynamoDB's side ---------------------------------------------------------------------------
    def ledger_items(self) -> list[dict[str, Any]]:
        """Every item of the ledger table, as a consistent Scan returns it (read from moto's backend)."""
        return [from_item(item) for item in self.world.table_items(self.world.ledger_table)]

    def _empty_ledger(self) -> None:
        from moto.dynamodb.models import dynamodb_backends

        from idem.sim.atomic import _LOCK
        from idem.sim.world import ACCOUNT

        with _LOCK:
            dynamodb_backends[ACCOUNT][REGION].get_table(self.world.ledger_table).items.clear()

    def put_item(self, item: dict[str, Any]) -> None:
        self.world.dynamodb.put_item(TableName=self.world.ledger_table, Item=to_item(item))

    def ttl_sweep(self, attribute: str) -> int:
        """DynamoDB's TTL deletes items whose time has passed (days late, or at once: any time after)."""
        swept = 0
        for item in self.ledger_items():
            expires = item.get(attribute)
            if isinstance(expires, (int, float)) and expires <= self.clock.now():
                self.world.dynamodb.delete_item(TableName=self.world.ledger_table, Key=to_item({"pk": item["pk"]}))
                swept += 1
        return swept


def emf_count(stdout: str, metric: str) -> int:
    """A metric of the CloudWatch EMF documents printed on stdout, summed."""
    total = 0
    for line in stdout.splitlines():
        with contextlib.suppress(ValueError):
            doc = json.loads(line)
            if isinstance(doc, dict) and "_aws" in doc:
                total += int(doc.get(metric, 0) or 0)
    return total

