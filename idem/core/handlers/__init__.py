"""The handler patterns, one module each: naive, claim_first, robust, and keyed (the one to copy).

`idem.core.patterns` names them for the entry point's HANDLER_MODE.
"""
from __future__ import annotations

#: The handler to copy: the files a reader copies into a function's folder (keyed.py and its
#: siblings, which it imports by their plain names; keyed_stripe.py is Stripe and what its answers mean).
FILES_TO_COPY = ("keyed.py", "keyed_events.py", "keyed_settings.py", "keyed_orders.py", "keyed_stripe.py")
#: Optional beside them, what a reader may drop: the shapes and modes the production stack never uses
#: (SNS, EventBridge; ORDER_IDENTITY=object-name, upload). Without it, the handler refuses those events
#: as malformed, and those modes at cold start.
OPTIONAL_FILE = "keyed_event_shapes.py"
#: The tests that ship with the copy: run in a folder holding only the files above (pytest, boto3,
#: moto and stripe installed; nothing of idem).
SHIPPED_TESTS = "test_keyed.py"

