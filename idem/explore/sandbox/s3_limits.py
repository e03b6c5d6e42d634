"""S3's limit on a key, which moto does not keep: a name is at most 1,024 bytes of UTF-8
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html). moto stores a longer one;
S3 refuses the request with KeyTooLongError, "Your key is too long", 400
(https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html). Installed in the check's
process, every write of the function's that names a longer key gets S3's answer, before it is sent
(as botocore's own parameter checks are: no boundary, no effect)."""
from __future__ import annotations

from typing import Any

from ..run.objects import KEY_BYTES

#: The S3 operations that create an object at `Key` (a copy's or an upload's destination).
WRITES = ("PutObject", "CopyObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload",
          "UploadPartCopy", "RestoreObject", "WriteGetObjectResponse")
_installed = [False]


def too_long(operation: str, params: dict[str, Any]) -> bool:
    key = params.get("Key")
    return operation in WRITES and isinstance(key, str) and len(key.encode("utf-8")) > KEY_BYTES


def install() -> None:
    if _installed[0]:
        return
    _installed[0] = True
    import botocore.client
    from botocore.exceptions import ClientError

    real = botocore.client.BaseClient._make_api_call

    def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if client.meta.service_model.service_name == "s3" and too_long(operation, params):
            raise ClientError({"Error": {"Code": "KeyTooLongError", "Message": "Your key is too long"},
                               "ResponseMetadata": {"HTTPStatusCode": 400}}, operation)
        return real(client, operation, params)

    botocore.client.BaseClient._make_api_call = call  # type: ignore[method-assign]
