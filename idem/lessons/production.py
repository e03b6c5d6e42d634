"""Running the stack in production (chapter 10, "Run it in production"): the numbers the
production profile's queue and concurrency give, read from template.yaml, and the chapter's
exercise, how long an upload outlives a provider outage.
"""
from __future__ import annotations

import textwrap
from typing import Any

from ..deploy import template as tp
from .answers import not_yet, unfilled
from .facts import STRIPE_ENDPOINT_REQUESTS_PER_SECOND

#: Lambda keeps this much of an account's concurrency unreserved: "Lambda reserves 100 units of
#: concurrency for functions that don't have reserved concurrency"
#: https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
UNRESERVED_CONCURRENCY = 100


def concurrency_numbers() -> dict[str, float]:
    """The production profile's concurrency: the reserved copies, the account's limit they need
    (Lambda keeps 100 unreserved), and the shortest Stripe call that keeps them under the
    endpoint's rate limit (each copy makes one charge call at a time)."""
    reserved = int(tp.load()["Parameters"]["ReservedConcurrency"]["Default"])
    return {"reserved": reserved, "account limit": reserved + UNRESERVED_CONCURRENCY,
            "stripe per second": STRIPE_ENDPOINT_REQUESTS_PER_SECOND,
            "shortest call (s)": reserved / STRIPE_ENDPOINT_REQUESTS_PER_SECOND}


def upload_queue_numbers() -> dict[str, int]:
    """The production upload queue, read from the template: how long a message is kept, how often
    it comes back, how many receives before the failure queue, and so how long it is retried."""
    queue = tp.load()["Resources"]["UploadQueue"]["Properties"]
    visibility, receives = int(queue["VisibilityTimeout"]), int(queue["RedrivePolicy"]["maxReceiveCount"])
    return {"retention days": int(queue["MessageRetentionPeriod"]) // 86400, "visibility s": visibility,
            "max receives": receives, "retried for s": visibility * receives}


def outage_lines() -> str:
    """The outage arithmetic, in three lines, from the template's numbers."""
    q, c = upload_queue_numbers(), concurrency_numbers()
    return "\n".join(textwrap.fill(line, 96, subsequent_indent="    ") for line in [
        f"UploadQueue: a failed upload comes back every {q['visibility s']} s, at most {q['max receives']} "
        f"times: retried for {q['retried for s'] / 3600:g} hours, then moved to the failure queue",
        f"both queues keep a message {q['retention days']} days; the demo's direct invocation "
        "retries twice in about 3 minutes",
        f"{c['reserved']:g} copies at once stay under Stripe's {c['stripe per second']:g} requests a second "
        f"while a charge call takes {c['shortest call (s)']:g} s or more; the account needs a "
        f"concurrency limit of {c['account limit']:g} or more"])


def check_outage_hours(my_hours: Any) -> str:
    """The chapter's exercise: how many hours can Stripe be down before an upload that arrived at
    the start of the outage leaves UploadQueue for the failure queue? Wrong answers get the reason."""
    if unfilled(my_hours):
        return not_yet("my_hours is None", "Find the queue's VisibilityTimeout and its "
                       "maxReceiveCount in the template: how often does a failed upload come back, "
                       "and how many times?")
    if isinstance(my_hours, bool) or not isinstance(my_hours, (int, float)):
        return f"Not a number of hours: {my_hours!r}."
    q = upload_queue_numbers()
    right = q["retried for s"] / 3600
    if abs(my_hours - right) < 0.01:
        return (f"Right: {q['max receives']} receives, one every {q['visibility s']} s, is {right:g} hours. "
                "A longer outage moves uploads to the failure queue, which keeps them "
                f"{q['retention days']} days for `idem redrive`.")
    if abs(my_hours - q["retention days"] * 24) < 0.01:
        return (f"Not {my_hours:g}: {q['retention days']} days is how long the queue keeps a message, but "
                f"after {q['max receives']} receives the redrive policy moves it on first.")
    if abs(my_hours - q["visibility s"] / 3600) < 0.01:
        return (f"Not {my_hours:g}: {q['visibility s']} s is one wait between tries; a failed upload "
                f"comes back {q['max receives']} times.")
    if abs(my_hours - 6) < 0.01:
        return (f"Not {my_hours:g}: six hours is Lambda's maximum event age for an asynchronous "
                "invocation, the demo's path. In prod the queue decides.")
    return (f"Not {my_hours:g}: multiply the wait between tries (VisibilityTimeout) by the number "
            "of tries (maxReceiveCount).")


def _span(seconds: float) -> str:
    return f"{seconds / 3600:g} hours" if seconds >= 3600 else f"{seconds / 60:g} minutes"


def outage_fate(outage_hours: float, profile: str = "prod") -> str:
    """What happens to an order uploaded in the first second of a provider outage of
    `outage_hours`: through prod's UploadQueue, or the demo's direct asynchronous invocation
    (the local runtime's retry delays, Lambda's: one minute, then two)."""
    from ..sim.runtime import RETRY_DELAYS

    if profile not in ("prod", "demo"):
        raise ValueError(f"profile must be prod or demo, not {profile!r}")
    if outage_hours < 0:
        raise ValueError("outage_hours must be 0 or more")
    outage = outage_hours * 3600
    q = upload_queue_numbers()
    if profile == "prod":
        path, tries, gives_up = "UploadQueue", q["max receives"], q["retried for s"]
    else:
        path, tries, gives_up = "direct invocation", 1 + len(RETRY_DELAYS), sum(RETRY_DELAYS)
    if outage < gives_up:
        return (f"{profile} ({path}): charged once Stripe answers again, after {outage_hours:g} h; "
                "nothing for a person to do")
    return textwrap.fill(
        f"{profile} ({path}): all {tries} tries failed within {_span(gives_up)}; the order waits in the "
        f"failure queue (kept {q['retention days']} days) for `idem redrive`, and its alarm mails the topic",
        96, subsequent_indent="    ")
