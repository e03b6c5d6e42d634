"""Running the stack in production (chapter 10, "Run it in production"): the numbers the
production profile's queue and concurrency give, read from template.yaml, and the chapter's
exercise, sizing the queue's maxReceiveCount for a longer provider outage.

How SQS counts: a message's first receive is its first try, and each failed try hides it for the
visibility timeout. With maxReceiveCount N, the N-th receive is the last try, (N - 1) timeouts
after the first; once that try fails and the message is visible again, the redrive policy moves
it to the dead-letter queue ("after the value of maxReceiveCount is exceeded"):
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html
"""
from __future__ import annotations

import textwrap
from typing import Any

from ...deploy import template as tp
from ..answers import folded, not_yet, unfilled
from ..facts import STRIPE_ENDPOINT_REQUESTS_PER_SECOND

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
    it comes back, how many receives before the failure queue, when its last try comes (after
    receives - 1 waits) and when the queue moves it on (one more wait)."""
    queue = tp.load()["Resources"]["UploadQueue"]["Properties"]
    visibility = int(queue["VisibilityTimeout"])
    receives = int(queue["RedrivePolicy"]["maxReceiveCount"])
    return {"retention days": int(queue["MessageRetentionPeriod"]) // 86400,
            "visibility s": visibility, "max receives": receives,
            "last try s": visibility * (receives - 1), "moved after s": visibility * receives}


def outage_lines() -> str:
    """The outage arithmetic, in three lines, from the template's numbers."""
    q, c = upload_queue_numbers(), concurrency_numbers()
    return "\n".join(textwrap.fill(line, 96, subsequent_indent="    ") for line in [
        f"UploadQueue: a failed upload is tried again every {q['visibility s']} s, {q['max receives']} tries "
        f"in all: the last {q['last try s'] / 3600:g} hours after the first; "
        f"{q['moved after s'] / 3600:g} hours in, the queue moves it to the failure queue",
        f"both queues keep a message {q['retention days']} days; the demo's direct invocation "
        "retries twice in about 3 minutes",
        f"{c['reserved']:g} copies at once stay under Stripe's {c['stripe per second']:g} requests a second "
        f"while a charge call takes {c['shortest call (s)']:g} s or more; the account needs a "
        f"concurrency limit of {c['account limit']:g} or more"])


#: The exercise's outage: Stripe down for this many hours.
EXERCISE_OUTAGE_HOURS = 12


def receives_needed(outage_hours: float = EXERCISE_OUTAGE_HOURS) -> int:
    """The smallest maxReceiveCount whose last try comes once the outage is over, at the
    template's visibility timeout: (N - 1) waits must cover the outage."""
    visibility = upload_queue_numbers()["visibility s"]
    return int(-(-outage_hours * 3600 // visibility)) + 1


def check_receive_count(my_receives: Any) -> str:
    """The chapter's exercise: the maxReceiveCount that keeps an upload, which arrived in the first
    second of a 12-hour Stripe outage, in UploadQueue until Stripe answers again, with the
    visibility timeout unchanged. Wrong answers get the reason, folded to the page."""
    return folded(_receive_count(my_receives))


def _receive_count(my_receives: Any) -> str:
    if unfilled(my_receives):
        return not_yet("my_receives is None: set it to a whole number of receives")
    if isinstance(my_receives, float) and my_receives.is_integer():
        my_receives = int(my_receives)
    if isinstance(my_receives, bool) or not isinstance(my_receives, int):
        return f"Not a whole number of receives: {my_receives!r}."
    q, right = upload_queue_numbers(), receives_needed()
    visibility, hours = q["visibility s"], EXERCISE_OUTAGE_HOURS
    if my_receives == q["max receives"]:
        return (f"Not {my_receives}: that is today's setting, whose last try comes "
                f"{q['last try s'] / 3600:g} hours in, before Stripe is back.")
    if my_receives == hours * 3600:
        return f"Not {my_receives}: that is the outage in seconds; count tries, {visibility} s apart."
    if my_receives == right - 1:  # the fencepost: a question, not the count (issue 43)
        return (f"Not {my_receives}: close, but its last try comes "
                f"{(my_receives - 1) * visibility / 3600:g} hours in, minutes before Stripe is back. "
                f"How long does the first try wait?")
    if my_receives < right:
        return (f"Not {my_receives}: its last try comes {(my_receives - 1) * visibility / 3600:g} hours in, "
                f"before Stripe is back. A try comes every {visibility} s (VisibilityTimeout).")
    extra = "" if my_receives == right else (
        f" {right} is the least; each receive past it lets a poison record wait "
        f"{visibility} s longer before anyone hears of it.")
    return (f"Right: {my_receives} tries, {visibility} s apart, reach {(my_receives - 1) * visibility / 3600:g} "
            f"hours after the first, so the last comes once the {hours}-hour outage is over.{extra} Check the "
            f"retention too: the queue keeps a message {q['retention days']} days, far longer.")


def _span(seconds: float) -> str:
    return f"{seconds / 3600:g} hours" if seconds >= 3600 else f"{seconds / 60:g} minutes"


def outage_fate(outage_hours: float, profile: str = "prod") -> str:
    """What happens to an order uploaded in the first second of a provider outage of
    `outage_hours`: through prod's UploadQueue, or the demo's direct asynchronous invocation
    (the local runtime's retry delays, Lambda's: one minute, then two)."""
    from ...sim.runtime import RETRY_DELAYS

    if profile not in ("prod", "demo"):
        raise ValueError(f"profile must be prod or demo, not {profile!r}")
    if outage_hours < 0:
        raise ValueError("outage_hours must be 0 or more")
    outage = outage_hours * 3600
    q = upload_queue_numbers()
    if profile == "prod":
        path, tries, gives_up = "UploadQueue", q["max receives"], q["last try s"]
    else:
        path, tries, gives_up = "direct invocation", 1 + len(RETRY_DELAYS), sum(RETRY_DELAYS)
    if outage <= gives_up:  # a try comes when (or after) the provider answers again
        return (f"{profile} ({path}): charged once Stripe answers again, after {outage_hours:g} h; "
                "nothing for a person to do")
    return textwrap.fill(
        f"{profile} ({path}): all {tries} tries failed within {_span(gives_up)}; the order waits in the "
        f"failure queue (kept {q['retention days']} days) for `idem redrive`, and its alarm mails the topic",
        96, subsequent_indent="    ")
