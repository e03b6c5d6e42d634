"""Which schedules `idem check` runs: one schedule (`schedule`), the families built from a clean run's
boundaries (`build`: faults, overwrite, slow), time and accounts (`timed`, `sqs_timed`, `accounts`),
the delays drawn from their documented ranges (`timings`), faults in runs (`runs`), names that need
URL-decoding (`key_decoding`), what the reader's --object allows (`object_schedules`) and the test
knob that picks families (`family_choice`)."""
