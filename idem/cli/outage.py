"""`python -m idem outage`: a provider outage under steady uploads, on the virtual clock."""
from __future__ import annotations

import json
from typing import Any

from ..console import fail

HELP = "a provider outage under steady uploads: prod's SQS buffer against S3's direct invocation"


def configure(parser: Any) -> None:
    parser.add_argument("--shape", choices=("sqs", "s3", "both"), default="both",
                        help="sqs: S3 -> SQS -> Lambda (prod); s3: S3 invokes Lambda directly (the demo)")
    parser.add_argument("--outage-hours", type=float, default=6.0, help="how long the provider answers 503 (default 6)")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between uploads (default 60)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run(args: Any) -> int:
    if not 0 < args.outage_hours <= 24:
        return fail("--outage-hours must be more than 0 and at most 24")
    if not 10 <= args.every <= 3600:
        return fail("--every must be 10 to 3600 seconds")
    from ..explore.outage import run_outage  # moto: loaded when the command runs, not for --help

    shapes = ("sqs", "s3") if args.shape == "both" else (args.shape,)
    results = [run_outage(shape, outage_hours=args.outage_hours, every_seconds=args.every) for shape in shapes]
    if args.json:
        print(json.dumps([{**r.__dict__, "holds": r.holds} for r in results]))
    else:
        for r in results:
            print(r.render())
    return 0
