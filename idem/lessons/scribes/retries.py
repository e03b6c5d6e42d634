"""Chapter 01's exercise: predict what each retry setting costs when S3 sends the event twice.

The reader predicts, for each of Lambda's `MaximumRetryAttempts` (0 to 2), the charges `naive`
makes when S3 delivers one upload's event twice and every attempt fails after its charge (a case
the chapter does not run); the check runs the three and explains each miss without the number.
`check_retries` (one setting under `after_charge, once`) is the earlier form of the exercise.
"""
from __future__ import annotations

from ...explore import scenarios as sc
from ..answers import folded, not_yet, unfilled

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


#: Chapter 01's exercise: S3 sends the event twice, and every attempt fails after its charge.
PREDICTION_SCENARIO = dict(handler="naive", fault="after_charge", times="always", delivery="duplicate")


def check_retry_prediction(my_charges: dict[int, object]) -> str:
    """Run naive under each retry setting with the event delivered twice and every attempt failing
    after its charge; compare the provider's charges with the prediction for each setting. A miss
    gets the reason, never the number, until every setting is right."""
    if not isinstance(my_charges, dict) or set(my_charges) != set(RETRY_CHOICES):
        return "my_charges must keep its three settings, 0, 1 and 2, each with a number of charges."
    if unfilled(my_charges):
        return not_yet("my_charges holds no prediction: put a number of charges beside each setting")
    lines = []
    for retries in RETRY_CHOICES:
        guess = my_charges[retries]
        run = sc.run(sc.Scenario(**PREDICTION_SCENARIO, retries=retries))
        if unfilled(guess):
            lines.append(f"{retries} retries: no prediction yet.")
        elif isinstance(guess, bool) or not isinstance(guess, int):
            lines.append(f"{retries} retries: {guess!r} is not a number of charges.")
        elif guess == run.charges:
            lines.append(f"{retries} retries: right, {run.charges} charges from {run.attempts} invocations.")
        elif guess < run.charges:
            lines.append(f"{retries} retries: not {guess}, too few. How many copies of the event does S3 "
                         "send, and how many attempts does Lambda make of each?")
        else:
            lines.append(f"{retries} retries: not {guess}, too many. Count the attempts of one copy, then "
                         "the copies.")
    if all(line.split(": ")[1].startswith("right") for line in lines):
        lines.append("Even with retries off, the customer pays twice: a duplicate needs no failure. "
                     "Retries are not the bug; the handler must be safe to repeat.")
    return folded("\n".join(lines))


# -- chapter 00's exercise: how many charges, naive, a duplicate and one failure after the charge ----
GUESS_SCENARIO = sc.Scenario("naive", "after_charge", "once", "duplicate")


def check_charges_guess(my_guess: object) -> str:
    """Run naive with S3 sending the event twice and the first attempt failing after its charge;
    compare the provider's charges with the guess. A wrong guess gets a question, never the count."""
    return folded(_charges_guess(my_guess))


def _charges_guess(my_guess: object) -> str:
    if unfilled(my_guess):
        return not_yet("put a number in my_guess")
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
        return (f"Not {my_guess}: close. Write down every invocation in time order, from both copies "
                "of the event, and mark the ones that reach the provider.")
    if my_guess > truth.charges:
        return (f"Not {my_guess}: too many. Which invocations fail, and which of those does Lambda "
                "run again?")
    return f"Not {my_guess}. Count the invocations that reach the provider, from both copies of the event."
