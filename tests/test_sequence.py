"""idem.views.sequence: the arrows of a real run, in the order they happened."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from idem import views  # noqa: E402
from idem.lessons.scribes import leases  # noqa: E402
from idem.explore import scenarios as sc  # noqa: E402
from idem.views import sequence as sq  # noqa: E402

Q, FQ, LEDGER, PROVIDER = sq.QUEUE, sq.FAILURE_QUEUE, sq.LEDGER, sq.PROVIDER


@pytest.fixture(scope="module")
def silent_mismatch():
    return sc.run(sc.Scenario("claim_first", "after_charge", "once"))


@pytest.fixture(scope="module")
def replayed():
    return sc.run(sc.Scenario("keyed", "after_charge", "once", how="crash"))


def test_claim_first_charges_dies_and_its_retry_stands_down(silent_mismatch):
    seq = views.sequence_of(silent_mismatch)
    assert seq.lifelines == [FQ, Q, "attempt 1", "attempt 2", LEDGER, PROVIDER]
    assert seq.arrows() == [
        (Q, "attempt 1", "invoke"),
        ("attempt 1", LEDGER, "call"), (LEDGER, "attempt 1", "ok"),  # the claim
        ("attempt 1", PROVIDER, "call"), (PROVIDER, "attempt 1", "lost"),  # money moved, answer lost
        ("attempt 1", Q, "error"),
        (Q, "attempt 2", "invoke"),
        ("attempt 2", LEDGER, "call"), (LEDGER, "attempt 2", "refused"),  # the claim is held
        ("attempt 2", Q, "returned"),  # a success: nothing reaches the failure queue
    ]
    labels = [m.label for m in seq.messages]
    assert labels[-2:] == ["refused: claimed already", "returns duplicate"]
    assert [m.t for m in seq.messages][6] == 60  # Lambda's retry, a minute later
    assert seq.deaths == [(5, "attempt 1", "error")]
    assert seq.spans == {"attempt 1": (0, 5), "attempt 2": (6, 9)}
    assert "0 charge" in seq.notes[LEDGER] and "1 charge" in seq.notes[PROVIDER]


def test_keyed_crash_then_the_providers_replay(replayed):
    seq = views.sequence_of(replayed)
    kinds = [m.kind for m in seq.messages]
    # first attempt: claim, read who pays (the customer mapping), a new charge, then the process
    # dies before the commit
    assert kinds[:8] == ["invoke", "call", "ok", "call", "ok", "call", "charged", "error"]
    assert seq.messages[3].label.startswith("GetItem: who pays")
    assert seq.messages[7].label == "crash: the process died"
    assert seq.deaths == [(7, "attempt 1", "crash")]
    # the retry's claim meets the dead attempt's lapsed claim and takes it over (a refused put,
    # then a put fenced to the record read), reads who pays, gets the first charge back, commits
    retry = seq.messages[8:]
    assert [(m.source, m.target, m.kind) for m in retry] == [
        (Q, "attempt 2", "invoke"),
        ("attempt 2", LEDGER, "call"), (LEDGER, "attempt 2", "refused"),
        ("attempt 2", LEDGER, "call"), (LEDGER, "attempt 2", "ok"),
        ("attempt 2", LEDGER, "call"), (LEDGER, "attempt 2", "ok"),
        ("attempt 2", PROVIDER, "call"), (PROVIDER, "attempt 2", "replay"),
        ("attempt 2", LEDGER, "call"), (LEDGER, "attempt 2", "ok"),
        ("attempt 2", Q, "returned"),
    ]
    assert "lease ran out" in retry[2].label and "take over" in retry[3].label
    assert "idempotency key" in retry[7].label and "ch_" in retry[8].label
    assert "commit" in retry[9].label
    assert "1 charge" in seq.notes[LEDGER] and "1 charge" in seq.notes[PROVIDER]
    # both ledgers name the same charge; the first attempt's charge is named by the replay
    charge_id = retry[8].label.rsplit(" ", 1)[-1]
    assert seq.messages[6].label == f"new charge {charge_id}"
    assert charge_id in seq.notes[LEDGER] and charge_id in seq.notes[PROVIDER]


def test_the_poison_ends_in_the_failure_queue():
    seq = views.sequence_of(sc.run(sc.Scenario("robust", "at_charge", "always")))
    assert [m.kind for m in seq.messages if m.target == PROVIDER] == ["not_sent"] * 3
    assert [name for _, name, _ in seq.deaths] == ["attempt 1", "attempt 2", "attempt 3"]
    assert seq.arrows()[-1] == (Q, FQ, "record")
    assert "RetriesExhausted" in seq.messages[-1].label


def test_a_copy_that_ran_inside_the_zombie_is_drawn_where_it_ran():
    """The copy runs while the first invocation stalls after its charge: its arrows come
    between the first one's charge and its refused commit."""
    seq = views.sequence_of(leases.zombie("keyed", pause=45))
    first, copy = "copy 1, attempt 1", "copy 2, attempt 1"
    order = [(m.source, m.target, m.kind) for m in seq.messages]
    charged = order.index((PROVIDER, first, "charged"))
    assert order[charged + 1] == (Q, copy, "invoke")
    assert (PROVIDER, copy, "replay") in order
    fenced = order.index((LEDGER, first, "refused"))
    assert fenced > order.index((copy, Q, "returned"))
    assert seq.messages[fenced].label == "refused: not the owner"


def test_the_chart_draws_every_arrow_and_a_legend_for_every_kind(silent_mismatch):
    fig = views.sequence_chart(silent_mismatch)
    ax = fig.axes[0]
    seq = views.sequence_of(silent_mismatch)
    arrows = [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    assert len(arrows) == len(seq.messages)
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {sq.KINDS[m.kind][0] for m in seq.messages} <= legend
    assert "the attempt dies here" in legend


def test_every_public_name_is_reexported():
    for name, value in vars(sq).items():
        if not name.startswith("_") and getattr(value, "__module__", None) == sq.__name__:
            assert getattr(views, name) is value, name


def test_a_listing_without_its_docstring_is_the_code_that_runs():
    from idem.core.handlers.keyed import KeyedLedger

    code = views.source_without_docstring(KeyedLedger.commit)
    assert code.startswith("def commit(") and '"""' not in code and "self.client." in code
    assert KeyedLedger.commit.__doc__.split()[0] not in code.split("try:")[0]
    shown = views.show_code(KeyedLedger.claim, KeyedLedger.commit).data
    assert shown.startswith("```python") and "def claim(" in shown and "def commit(" in shown

    def plain(x):
        return x + 1

    assert views.source_without_docstring(plain) == "def plain(x):\n    return x + 1"
