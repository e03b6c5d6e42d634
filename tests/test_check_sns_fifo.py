"""A handler that publishes to an SNS FIFO topic is judged by what the topic delivers: the check
subscribes its own FIFO queue to the topic before the first publish goes out and counts the
messages that queue gets, so a retried publish the topic deduplicates counts once. A standard
topic does not deduplicate: its publishes stay counted by calls (tests/test_check_inputs.py,
the sns_notifier)."""
from __future__ import annotations

import json

from check_cli import FAST, HANDLERS, cli

TEMPLATE = HANDLERS / "sns_fifo_notifier.yaml"


def _check(function: str) -> tuple[int, dict, str]:
    code, out, err = cli("--template", str(TEMPLATE), "--function", function, "--effect", "sns:Publish",
                         *FAST, "--json")
    return code, json.loads(out), err


#: a copy of S3's event at each end of its range, and 15 minutes later (idem/explore/families/timed.py)
AT_ONCE = "no fault; a copy of the event at its range's low end (0 s); 0 retries"
LATER = "no fault; a copy of the event 15 min 1 s later (past a 15-minute window); 0 retries"


def test_pins_bug_a_fifo_notifier_with_a_deduplication_id_from_the_upload_publishes_a_late_copy_twice():
    """The topic drops an id it has seen for 5 minutes only; a copy of S3's event can come hours
    later (S3 delivers at least once, and Lambda's queue keeps an event up to 6 hours:
    idem/explore/families/timings.py), and then the notice is delivered twice. Issue 41 names this false
    "holds"."""
    code, report, err = _check("Notifier")
    assert code == 1, err
    assert report["baseline"]["sns:Publish"] == 1
    assert report["env"]["TOPIC_ARN"].endswith(":idem-check-Notices.fifo")
    published = {r["schedule"]: r["effects"]["sns:Publish"] for r in report["results"]}
    # S3 delivering the event twice at once, or a retry after a lost answer: one id, delivered once
    assert published[AT_ONCE] == 1
    assert published["exception after sns:Publish on arrival 1; single; 0 retries"] == 1
    assert published[LATER] == 2  # past the 5-minute window: delivered again
    # a second order at the same name is a new upload (its own eTag): two notices, both delivered
    assert published["no fault; a second order at the same name (new version), after the first is done; 0 retries"] == 2


def test_pins_bug_a_fifo_notifier_on_a_content_deduplicated_topic_publishes_a_late_copy_twice():
    code, report, err = _check("ContentNotifier")
    assert code == 1, err
    assert report["env"]["TOPIC_ARN"].endswith(":idem-check-NoticesByContent.fifo")
    published = {r["schedule"]: r["effects"]["sns:Publish"] for r in report["results"]}
    assert (published[AT_ONCE], published[LATER]) == (1, 2)


def test_pins_bug_a_fresh_uuid_deduplication_id_per_publish_is_double_effect():
    code, report, err = _check("FreshIdNotifier")
    assert code == 1, err
    assert report["baseline"]["sns:Publish"] == 1 and report["verdicts"].get("double_effect", 0) > 0
    assert any("sns:Publish 2 times" in f for r in report["results"] for f in r["findings"])


def test_a_template_fifo_topic_is_made_with_its_fifo_name_and_attributes():
    from idem.explore.target.template_function import create, read
    from idem.sim.world import ensure_moto, fake_client, fake_session

    found = read(str(TEMPLATE), "ContentNotifier")
    assert found.env["TOPIC_ARN"] == "arn:aws:sns:us-east-1:123456789012:idem-check-NoticesByContent.fifo"
    assert {r["name"] for r in found.resources} >= {"idem-check-Notices.fifo", "idem-check-NoticesByContent.fifo"}
    ensure_moto()
    create(found.resources, fake_session())
    for name, by_content in (("Notices", "false"), ("NoticesByContent", "true")):
        attributes = fake_client("sns").get_topic_attributes(
            TopicArn=f"arn:aws:sns:us-east-1:123456789012:idem-check-{name}.fifo")["Attributes"]
        assert (attributes["FifoTopic"], attributes["ContentBasedDeduplication"]) == ("true", by_content)


def test_the_checks_queue_gets_a_deduplicated_publish_once():
    """moto's SNS passes the deduplication id to the subscribed FIFO queue, which drops a repeat."""
    from idem.sim.boundary import Watch, _fifo_topic
    from idem.sim.world import ensure_moto, fake_client

    ensure_moto()
    sns, sqs = fake_client("sns"), fake_client("sqs")
    arn = sns.create_topic(Name="idem-test-dedup.fifo", Attributes={"FifoTopic": "true"})["TopicArn"]
    for watch in (Watch(), Watch()):  # a second run subscribes no second queue, and starts empty
        assert _fifo_topic(watch, arn)
        for dedup in ("a", "a", "b"):
            sns.publish(TopicArn=arn, Message="m", MessageGroupId="g", MessageDeduplicationId=dedup)
        got = sqs.receive_message(QueueUrl=watch.topics[arn], MaxNumberOfMessages=10)["Messages"]
        assert len(got) == 2
    assert len(sns.list_subscriptions_by_topic(TopicArn=arn)["Subscriptions"]) == 1
    assert not _fifo_topic(Watch(), "arn:aws:sns:us-east-1:123456789012:no-such-topic.fifo")
