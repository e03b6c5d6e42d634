"""What AWS services do that moto does not, answered around it for the function's own calls: DynamoDB's
ClientRequestToken on transactions (`transact_tokens`), a BatchWriteItem naming one item twice
refused whole (`batch_keys`), a PartiQL INSERT of a key the table has refused (ExecuteStatement,
ExecuteTransaction cancelled whole, BatchExecuteStatement's per-statement error), and its `?` parameters
read (`partiql_insert`), a batch call answered in part
(BatchWriteItem, BatchGetItem, SendMessageBatch, PublishBatch, PutEvents: `batch_partial`), ChangeMessageVisibility on the modelled SQS source queue (`sqs_visibility`), and StartExecution on an
EXPRESS state machine, a new execution every time (`sfn_express`); and DynamoDB's refusal of an
expression placeholder no expression uses and of a Number past 38 significant digits or its range
(`request_checks`); and the legacy `Expected` of PutItem, UpdateItem and DeleteItem, with its
ConditionalOperator, its Value compared and its refused forms, and UpdateItem's legacy AttributeUpdates
(`legacy_parameters`); and a DynamoDB read without ConsistentRead (or of a global secondary index), which may
miss a write of the last second (`eventual_reads`)."""
