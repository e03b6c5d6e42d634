"""What the function is, before anything runs: the handler `idem check` is given (`target`), its
shape (`handler_shape`), its template (`template_function`, `template_parameters`,
`template_triggers`, `deployed`, `template_run`), its environment on Lambda (`lambda_env`), its own
dependencies (`dependencies`, `requirements_cache`) and the effects it may have, by name (`service_names`)."""
