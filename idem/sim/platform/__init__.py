"""What AWS services do that moto does not, answered around it for the function's own calls: DynamoDB's
ClientRequestToken on transactions (`transact_tokens`), a BatchWriteItem answered with items unprocessed
(`batch_partial`), and ChangeMessageVisibility on the modelled SQS source queue (`sqs_visibility`)."""
