"""The team's own set-up for the fan-out handlers (`--setup tests/handlers/fanout_setup.py:create`): the
FIFO queue the payments service reads and the FIFO topic the warehouse subscribes to, made on the
check's AWS, their names given to the handler's environment."""


def create(session):
    sqs, sns = session.client("sqs"), session.client("sns")
    queue = sqs.create_queue(QueueName="payment-requests.fifo", Attributes={"FifoQueue": "true"})
    topic = sns.create_topic(Name="orders-accepted.fifo", Attributes={"FifoTopic": "true"})
    return {"PAYMENTS_QUEUE_URL": queue["QueueUrl"], "ORDERS_TOPIC_ARN": topic["TopicArn"]}
