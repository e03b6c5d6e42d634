"""The Handler setting points at app.lambda_handler, and app only re-exports the function written in
impl.py, a layout Lambda runs as it is (the runtime imports app and takes its attribute
lambda_handler: https://docs.aws.amazon.com/lambda/latest/dg/python-handler.html). The check must find
the handler there and judge it: it breaks (impl.py charges with no idempotency key), never "defines no
lambda_handler"."""
from impl import lambda_handler, make_provider

__all__ = ["lambda_handler", "make_provider"]
