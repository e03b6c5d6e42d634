"""The Ledger That Charged Twice: idempotent S3-triggered Lambda handlers.

The package is layered; each folder is one job, and imports only point down this list:

- `core/`: what ships inside the Lambda (standard library and boto3): events, keys, ledger,
  provider stand-in, the handlers, the entry point, reconciliation.
- `console.py`: how every command prints errors and columns; `demo_failure.py`: the deploy
  demo's fault wrapper, shipped beside the core only in the demo's artifact.
- `sim/`: the local AWS on moto and a virtual clock (world, Lambda runtime, boundaries, faults).
- `deploy/`: deploying `template.yaml`, to moto or to your AWS account.
- `explore/`: the scenario matrix, every fault schedule, races, replays, redrives, `idem check`.
- `cost/`: DynamoDB's billing rules, the bill per upload, the benchmark.
- `lessons/`: each chapter's staging and exercise checkers.
- `views/`: what the chapters show (pandas, matplotlib, ipywidgets).
- `cli/`: `python -m idem`, one module per command.

`docs/architecture.md` draws the same picture; `tests/test_layout.py` holds the order.
"""
