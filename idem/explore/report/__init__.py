"""Reporting what `idem check` found: the report as text and as JSON (`check_report`), the schema the
JSON follows (`schema`, check-report.schema.json) and the `idem_check` pytest fixture (`pytest_plugin`)."""
