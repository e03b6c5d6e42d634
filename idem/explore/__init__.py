"""Exploring what the platform can do to a handler, and judging what happened.

`scenario` and `scenarios` are the matrix (handler x fault point x times x delivery),
`schedules` every fault schedule for one upload, `check` the same for any reader's handler
(`idem check`), `race` real threads racing for one claim, `replay` a captured event,
`redrive` the failure queue sent again, `powertools` Powertools' handler through the same
runtime, and `verdicts` the rules that name each outcome.

Built on `idem.sim` (and `idem.deploy`'s template reader, for the stack's lifetimes).
"""
