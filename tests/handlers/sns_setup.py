"""The team's own set-up for sns_notifier.py (`--setup tests/handlers/sns_setup.py:create`): the
topic it publishes to, created on the check's AWS, its ARN given to the handler's environment."""


def create(session):
    topic = session.client("sns").create_topic(Name="uploads-notices")
    return {"TOPIC_ARN": topic["TopicArn"]}
