"""Chapter 01's exercise: the retry setting that keeps `naive` to one charge, and what it costs.

The reader picks Lambda's `MaximumRetryAttempts` (0 to 2) for `naive` under `after_charge,
once`; the check runs that scenario and says what the customer paid and what the books say.
"""
from __future__ import annotations

from ..explore import scenarios as sc
from .answers import not_yet, unfilled

#: Lambda's MaximumRetryAttempts for asynchronous invocation: 0 to 2
#: (https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html).
RETRY_CHOICES = (0, 1, 2)


def check_retries(my_retries: int) -> str:
    """Run `naive`, failing once after the charge, with `my_retries`; explain what happened."""
    if unfilled(my_retries):
        return not_yet("set my_retries to a whole number", "Lambda's MaximumRetryAttempts is 0, 1 or 2. "
                       "Each attempt of naive runs the charge: count the attempts each setting allows.")
    if isinstance(my_retries, bool) or my_retries not in RETRY_CHOICES:
        return (f"{my_retries!r} is not a setting Lambda accepts: MaximumRetryAttempts is a whole "
                "number from 0 to 2.")
    run = sc.run(sc.Scenario("naive", "after_charge", "once", retries=my_retries))
    if run.charges != 1:
        retries = "1 retry" if my_retries == 1 else f"{my_retries} retries"
        return (f"With {retries} the customer pays {run.charges} times: each retry runs the "
                "charge again. Fewer retries means fewer second chances to charge.")
    return (f"One charge. The price: the event is in the failure queue ({run.dlq} message) and the "
            f"ledger holds {run.ledger} charges, so the books disagree with the provider "
            f"({run.verdict}). Turning retries off trades double charges for unfinished work.")


# -- chapter 00's exercise: how many charges, naive, a duplicate and one failure after the charge ----
GUESS_SCENARIO = sc.Scenario("naive", "after_charge", "once", "duplicate")


def check_charges_guess(my_guess: object) -> str:
    """Run naive with S3 sending the event twice and the first attempt failing after its charge;
    compare the provider's charges with the guess. A wrong guess gets the count it missed."""
    if unfilled(my_guess):
        return not_yet("put a number in my_guess", "Count the invocations: each copy of the event is "
                       "one, and so is each retry of a failed one.")
    if isinstance(my_guess, bool) or not isinstance(my_guess, int):
        return f"{my_guess!r} is not a number of charges: write a whole number, such as 1."
    truth = sc.run(GUESS_SCENARIO)
    if my_guess == truth.charges:
        return (f"Right: {truth.charges} charges, from {truth.attempts} invocations. naive keeps no record, "
                "so every invocation that reaches the provider charges.")
    if my_guess == 1:
        return ("Not 1: that is what the customer should pay, but naive keeps no record. Count the "
                "invocations that reach the provider.")
    if my_guess == truth.charges - 1:
        return (f"Not {my_guess}: close. Each copy of the event is one invocation, and the copy that "
                "failed is retried a minute later. Did you count both copies and the retry?")
    if my_guess > truth.charges:
        return (f"Not {my_guess}: too many. Only a failed invocation is retried, and the second copy "
                "succeeded.")
    return f"Not {my_guess}. Count the invocations: each copy of the event, and each retry of a failed one."
