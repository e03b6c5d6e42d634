"""The handler patterns, one module each: naive, claim_first, robust, and keyed (the one to copy).

`idem.core.patterns` names them for the entry point's HANDLER_MODE.
"""
