"""What botocore reads from an answer's headers, and moto from an S3 request's host, worked out once while a
batch of schedules runs (part of `idem.explore.run.fastcalls`; docs/reliability.md, "How long the
check takes"). Each follows botocore 1.44.8's or moto 5.2.5's own steps (requirements/constraints.txt):
under another release each goes its own way.

- **A header found in one look.** For each answer of a REST service (S3's GetObject, about 40
  members) botocore asks the answer's case-insensitive headers for every member that may come in
  a header, two look-ups each. The headers are written down once, lower-cased, and each member
  looked up there: the same value, under the same name compared as botocore compares it.
- **A host judged once.** moto asks five times a request whether the bucket is named in the host
  (regular expressions over the host, a read of the environment). The answer depends only on the
  host and moto's settings, and is kept for them.
"""
from __future__ import annotations

from typing import Any

#: the releases whose steps these follow
BOTOCORE_FOLLOWED = ("1.44.8",)
#: hosts kept (a check sees a few at most)
KEPT = 16_384


def botocore_version() -> str:
    import botocore

    return str(botocore.__version__)


def headers_read_once() -> Any:
    """botocore's reading of an answer's headers into its members, with one lower-cased table."""
    from botocore.awsrequest import HeadersDict
    from botocore.parsers import BaseRestParser

    own = BaseRestParser._parse_non_payload_attrs

    def parse_non_payload_attrs(self: Any, response: Any, shape: Any, member_shapes: Any, final_parsed: Any) -> None:
        headers = response["headers"]
        if type(headers) is not HeadersDict:  # a plain dict compares names as they are: botocore's way
            return own(self, response, shape, member_shapes, final_parsed)  # type: ignore[no-any-return]
        lowered = {name.lower(): headers[name] for name in headers}  # as _HeaderKey compares them
        # from here as botocore's own, each `name in headers` and `headers[name]` read from `lowered`
        for name in member_shapes:
            member_shape = member_shapes[name]
            location = member_shape.serialization.get("location")
            if location is None:
                continue
            elif location == "statusCode":
                final_parsed[name] = self._parse_shape(member_shape, response["status_code"])
            elif location == "headers":
                final_parsed[name] = self._parse_header_map(member_shape, headers)
            elif location == "header":
                header_name = member_shape.serialization.get("name", name).lower()
                if header_name in lowered:
                    final_parsed[name] = self._parse_shape(member_shape, lowered[header_name])
        return None

    BaseRestParser._parse_non_payload_attrs = parse_non_payload_attrs  # type: ignore[method-assign]

    def undo() -> None:
        BaseRestParser._parse_non_payload_attrs = own  # type: ignore[method-assign]
    return undo


def hosts_judged_once() -> Any:
    """moto's answer to "is the bucket named in the host?", kept per host and settings."""
    from urllib.parse import urlparse

    from moto import settings
    from moto.s3.responses import S3Response

    own = S3Response.__dict__["subdomain_based_buckets"]
    judge = own.__func__
    kept: dict[tuple[Any, ...], bool] = {}

    def subdomain_based_buckets(request: Any) -> bool:
        host = request.headers.get("host", request.headers.get("Host")) or urlparse(request.url).netloc
        key = (settings.S3_IGNORE_SUBDOMAIN_BUCKETNAME, host, tuple(settings.get_s3_custom_endpoints()))
        found = kept.get(key)
        if found is None:
            found = judge(request)
            if len(kept) >= KEPT:
                kept.clear()
            kept[key] = found
        return found

    S3Response.subdomain_based_buckets = staticmethod(subdomain_based_buckets)  # type: ignore[method-assign,assignment]

    def undo() -> None:
        S3Response.subdomain_based_buckets = own  # type: ignore[method-assign]
    return undo
