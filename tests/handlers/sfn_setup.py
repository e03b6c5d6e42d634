"""The team's own set-up for the Step Functions handlers (`--setup tests/handlers/sfn_setup.py:FUNCTION`):
the state machine they start, created on the check's AWS, its ARN given to the handler's environment.
`create`: a STANDARD machine (sfn_starter.py); `express`: an EXPRESS one (sfn_express_starter.py);
`with_markers`: a STANDARD machine and the table of per-name markers (sfn_marker_skips_reupload.py,
sfn_newest_upload_only.py)."""
import json

DEFINITION = json.dumps({"StartAt": "Fulfil", "States": {"Fulfil": {"Type": "Pass", "End": True}}})
ROLE = "arn:aws:iam::123456789012:role/fulfil-orders"


def create(session):
    machine = session.client("stepfunctions").create_state_machine(
        name="fulfil-orders", definition=DEFINITION, roleArn=ROLE)
    return {"STATE_MACHINE_ARN": machine["stateMachineArn"]}


def express(session):
    machine = session.client("stepfunctions").create_state_machine(
        name="fulfil-orders-express", definition=DEFINITION, roleArn=ROLE, type="EXPRESS")
    return {"STATE_MACHINE_ARN": machine["stateMachineArn"]}


def with_markers(session):
    env = create(session)
    session.client("dynamodb").create_table(
        TableName="upload-markers", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    return {**env, "MARKER_TABLE": "upload-markers"}
