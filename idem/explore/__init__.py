"""Exploring what the platform can do to a handler, and judging what happened.

`idem check` (any reader's handler, every schedule the platform can produce for one upload) starts
in `check` (`check_handler`: its inputs, the clean run, the order of the stages) and goes through
one folder per stage a schedule passes: `target` (what the function is: the handler, its
template, its environment), `sandbox` (the child process it runs in, and what it may touch),
`families` (which schedules: the families, their timings, their faults), `run` (running them:
worlds, batches, the pool, reuse), `judge` (the effects, the books, the state, the verdicts) and
`report` (text, JSON, the pytest plugin). `errors` says how a check ends without a report.

The chapters' tours sit here: `scenario` and `scenarios` are the matrix (handler x fault point x
times x delivery), `schedules` every fault schedule for one upload, `powertools` Powertools'
handler through the same runtime, `race` real threads racing for one claim, `replay` a captured
event, `redrive` the failure queue sent again, `outage` a provider outage under steady uploads.

Built on `idem.sim` (and `idem.deploy`'s template reader, for the stack's lifetimes).
"""
