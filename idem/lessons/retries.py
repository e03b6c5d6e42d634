"""Chapter 01's exercise: the retry setting that keeps `naive` to one charge, and what it costs.

The reader picks Lambda's `MaximumRetryAttempts` (0 to 2) for `naive` under `after_charge,
once`; the check runs that scenario and says what the customer paid and what the books say.
"""
from __future__ import annotations

from ..explore import scenarios as sc

#: Lambda's MaximumRetryAttempts for asynchronous invocation: 0 to 2
#: (https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html).
RETRY_CHOICES = (0, 1, 2)


def check_retries(my_retries: int) -> str:
    """Run `naive`, failing once after the charge, with `my_retries`; explain what happened."""
    if isinstance(my_retries, bool) or my_retries not in RETRY_CHOICES:
        return (f"{my_retries!r} is not a setting Lambda accepts: MaximumRetryAttempts is a whole "
                "number from 0 to 2.")
    run = sc.run(sc.Scenario("naive", "after_charge", "once", retries=my_retries))
    if run.charges != 1:
        return (f"With {my_retries} retries the customer pays {run.charges} times: each retry runs the "
                "charge again. Fewer retries means fewer second chances to charge.")
    return (f"One charge. The price: the event is in the failure queue ({run.dlq} message) and the "
            f"ledger holds {run.ledger} charges, so the books disagree with the provider "
            f"({run.verdict}). Turning retries off trades double charges for unfinished work.")
