"""The scheduled reconciliation (idem/core/reconcile/job.py): windows, the three sides read from
moto (uploads, the ledger's day index, the provider), one planted case of each kind found with
its command, the cursor, S3 Inventory, Stripe's search paged, and IAM: every boto3 call it makes
is granted by template.yaml's ReconcileFunctionRole in each profile, and nothing more."""
from __future__ import annotations

import calendar
import gzip
import hashlib
import json
import urllib.parse
from typing import Any

import pytest

from idem.core.reconcile import job
from idem.core.dynamo import from_item, to_item
from idem.core.handlers.keyed_orders import Upload, identify  # the handler's key recipe, whatever it is
from idem.deploy import template as tp
from idem.sim.runtime import LocalLambda, on_clock
from idem.sim.world import LocalWorld, fake_session, order_body

LAG = 21600 + job.MAX_INVOCATION_SECONDS


def test_the_window_is_whole_aligned_and_closes_a_lag_before_now():
    start, end = job.window(now=100_000.0, minutes=60, lag_seconds=LAG)
    assert (end - start, end % 3600) == (3600, 0)
    assert 100_000 - LAG - 3600 < end <= 100_000 - LAG


def _entry(charge_id: str, at: float, cents: int = 500) -> job.Entry:
    return job.Entry(charge_id, "alice", cents, at)


def test_a_charge_booked_by_a_late_retry_is_not_a_difference():
    start, end = 36_000.0, 39_600.0
    charge = _entry("ch_1", end - 1)  # charged in the last second of the window ...
    line = _entry("ch_1", end + 600)  # ... booked by a retry ten minutes after it closed
    assert job.compare([line], [charge], start, end).differences == 0
    early = _entry("ch_2", start - 600)  # charged before the window, booked inside it
    assert job.compare([_entry("ch_2", start + 5)], [early], start, end).differences == 0


def test_each_kind_of_difference_is_reported_once():
    start, end = 36_000.0, 39_600.0
    lines = [_entry("ch_1", start + 1), _entry("ch_2", start + 2, cents=400), _entry("ch_9", start + 9)]
    charges = [_entry("ch_1", start), _entry("ch_2", start + 1), _entry("ch_3", start + 3)]
    report = job.compare(lines, charges, start, end)
    assert [e.charge_id for e in report.unbooked] == ["ch_3"]
    assert [e.charge_id for e in report.uncharged] == ["ch_9"]
    assert report.amount_mismatches == [{"charge_id": "ch_2", "ledger_cents": 400, "provider_cents": 500}]
    assert report.differences == 3


# -- on moto: the stand-in provider (the demo profile) ---------------------------------------
#: The order identity each key recipe of keyed's stands for (docs/one_charge_per_order.md).
IDENTITIES = {"order": "order-id", "name": "object-name", "version": "upload", "content": "upload"}


def _record_calls(session: Any) -> list[tuple[str, str, dict]]:
    seen: list[tuple[str, str, dict]] = []

    def note(params: dict, model: Any, **_: Any) -> None:
        seen.append((model.service_model.signing_name, model.name, dict(params)))

    session.events.register("before-parameter-build", note)
    return seen


def _iam(call: tuple[str, str, dict], names: dict[str, str]) -> tuple[str, str]:
    """One recorded call as (IAM action, the resource label template.yaml's role uses)."""
    service, operation, params = call
    if service == "dynamodb":
        table = names[params["TableName"]]
        return (f"dynamodb:{operation}", f"{table}/index/{params['IndexName']}"
                if params.get("IndexName") else table)
    if service == "s3":
        bucket = names[params["Bucket"]]
        if operation == "ListObjectVersions":  # authorised as s3:ListBucketVersions on the bucket
            return ("s3:ListBucketVersions", bucket)
        if operation == "ListObjectsV2":  # authorised as s3:ListBucket on the bucket
            return ("s3:ListBucket", bucket)
        if operation == "GetObject" and params.get("VersionId"):  # a version: s3:GetObjectVersion
            return ("s3:GetObjectVersion", f"{bucket}/*")
        if bucket == "ReportBucket":
            return (f"s3:{operation}", f"{bucket}/{params['Key'].split('/')[0]}/*")
        return (f"s3:{operation}", f"{bucket}/*")
    if service == "ssm":
        return (f"ssm:{operation}", f"parameter:{names[params['Name']]}")
    raise AssertionError(f"unexpected call {service}:{operation}")


#: What Lambda itself does with the role (logs, a failed run's record to its failure queue),
#: and X-Ray's daemon when tracing is on.
SERVICE_GRANTS = {("logs:CreateLogStream", "ReconcileFunctionLogs"),
                  ("logs:PutLogEvents", "ReconcileFunctionLogs"),
                  ("sqs:SendMessage", "ReconcileFailureQueue"),
                  ("xray:PutTraceSegments", "*"), ("xray:PutTelemetryRecords", "*")}


def upload(world: LocalWorld, key: str, body: bytes | None = None) -> Any:
    """An upload whose LastModified is on the world's virtual clock (moto reads the clock)."""
    with on_clock(world.clock):  # without a body, the world's own (an order file, docs/one_charge_per_order.md)
        return world.upload(key, body) if body is not None else world.upload(key)


@pytest.fixture
def stand_in():
    """A keyed world with two orders charged and booked, and a report bucket."""
    with LocalWorld(prefix="reconcile-job") as world:
        runtime = LocalLambda(world, world.env("keyed"))
        for n in (1, 2):
            runtime.send(world.event(upload(world, f"alice/order-{n}.txt")))
        runtime.run()
        # keyed's commit writes booked_day itself: the one-time migration (for a ledger older
        # than the index) finds nothing to do
        assert job.backfill_booked_day(world.dynamodb, world.ledger_table) == 0
        # what keyed keys by (per upload today; per order once it follows docs/one_charge_per_order.md), read off its lines
        (recipe,) = {from_item(i)["pk"].split("#")[1] for i in world.table_items(world.ledger_table)
                     if from_item(i)["pk"].startswith("charge#")}  # not the customer mapping (account#)
        reports = f"{world.prefix}-reports"
        world.s3.create_bucket(Bucket=reports)
        env = {"LEDGER_TABLE": world.ledger_table, "PROVIDER_TABLE": world.provider_table,
               "REPORT_BUCKET": reports, "WINDOW_MINUTES": "60", "MAX_EVENT_AGE_SECONDS": "21600",
               "AWS_LAMBDA_FUNCTION_NAME": "idem-reconcile", "UPLOAD_BUCKET": world.bucket,
               "ORDER_IDENTITY": IDENTITIES[recipe], "STACK_NAME": "idem-test"}
        yield world, env
        for item in world.s3.list_objects_v2(Bucket=reports).get("Contents", []):
            world.s3.delete_object(Bucket=reports, Key=item["Key"])
        world.s3.delete_bucket(Bucket=reports)


def _now_covering(world: LocalWorld) -> float:
    """A moment whose last closed window holds the world's clock now."""
    return world.clock.now() + LAG + 3600


def test_a_clean_window_writes_its_report_and_metrics_and_moves_the_cursor(stand_in):
    world, env = stand_in
    printed: list[str] = []
    report = job.run(env, fake_session(), _now_covering(world), say=printed.append)
    assert (report.uploads, report.ledger_lines, report.provider_charges, report.differences) == (2, 2, 2, 0)
    assert report.render().splitlines()[-1].startswith("clean:")
    body = json.loads(world.s3.get_object(Bucket=env["REPORT_BUCKET"], Key=report.key())["Body"].read())
    assert body["differences"] == 0 and body["window"] == f"{job.iso(report.start)}/{job.iso(report.end)}"
    (line,) = printed
    metrics = json.loads(line)
    directive = metrics["_aws"]["CloudWatchMetrics"][0]
    assert (directive["Namespace"], directive["Dimensions"]) == ("Idem", [["FunctionName"]])
    assert metrics["FunctionName"] == "idem-reconcile" and metrics["Differences"] == 0
    assert job.read_cursor(world.dynamodb, world.ledger_table) == report.end


def test_each_run_resumes_from_the_cursor(stand_in):
    world, env = stand_in
    now = _now_covering(world)
    first = job.run(env, fake_session(), now, say=lambda _: None)
    again: list[str] = []
    job.run(env, fake_session(), now, say=again.append)
    assert again == []  # nothing closed since: no window read twice
    later: list[str] = []
    last = job.run(env, fake_session(), now + 3 * 3600, say=later.append)
    assert len(later) == 3 and last.start == first.end + 2 * 3600  # the three windows after it, in order
    assert job.read_cursor(world.dynamodb, world.ledger_table) == first.end + 3 * 3600


def test_one_planted_case_of_each_kind_is_found_with_its_command(stand_in):
    world, env = stand_in
    charged = world.provider().charges()
    # 1. an upload S3 never told the function about: no line, no charge
    lost = upload(world, "carol/order-3.txt")
    # 2. a ledger line whose charge the provider never made
    world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({
        "pk": "charge#version#planted", "status": "done", "account": "dave", "cents": 500,
        "charge_id": "ch_999999", "booked_at": world.clock.now(), "booked_day": job.day_of(world.clock.now())}))
    # 3. money moved with no line: a charge made for this stack outside the handler
    world.provider().charge(customer="erin", amount=700, currency="usd", reference="s3://elsewhere/x",
                            idempotency_key="charge#version#unbooked")
    # 4. a second charge for an order already charged (another key for the same upload)
    world.provider().charge(customer="alice", amount=500, currency="usd", reference=charged[0].reference,
                            idempotency_key="charge#version#second",  # the first's order, as keyed tells it:
                            metadata={"order_id": json.loads(order_body(1))["order_id"], "bucket": world.bucket,
                                      "idem_account": "alice"})  # an order is (account, order_id)
    # 5. an order a handler left for a person
    held = upload(world, "frank/order-5.txt")
    held_key = job.order_key(world.s3, job.UploadSeen(world.bucket, held.key, held.version_id, held.etag, 0),
                             env["ORDER_IDENTITY"])
    world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({
        "pk": held_key, "status": "needs_attention", "result": {"reason": "the provider answered 500"}}))
    printed: list[str] = []
    report = job.run(env, fake_session(), _now_covering(world), say=printed.append)
    found = {(f.kind, f.what): f for f in report.findings}
    assert sorted(kind for kind, _ in found) == ["double", "missing_line", "needs_attention", "unbooked",
                                                 "uncharged"]
    assert found[("missing_line", lost.uri)].command.startswith("python -m idem settle --stack idem-test --key charge#")
    assert found[("uncharged", "ch_999999")].command.endswith("--key charge#version#planted")
    assert found[("unbooked", "ch_000003")].command.endswith("--key charge#version#unbooked")
    assert found[("double", "ch_000004")].command == "python -m idem refund --stack idem-test --charge ch_000004"
    assert found[("needs_attention", held.uri)].detail == "the provider answered 500"
    assert json.loads(printed[0])["Differences"] == 5 and json.loads(printed[0])["DoubleCharges"] == 1
    assert "settle: python -m idem refund --stack idem-test --charge ch_000004" in report.render()


def test_a_charge_still_pending_when_its_window_is_judged_is_reported_with_settle(stand_in):
    world, env = stand_in
    waiting = upload(world, "gina/order-6.txt")
    key = job.order_key(world.s3, job.UploadSeen(world.bucket, waiting.key, waiting.version_id, waiting.etag, 0),
                        env["ORDER_IDENTITY"])
    world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({  # as keyed books a processing charge
        "pk": key, "status": "pending", "charge_id": "ch_777", "cents": 500,
        "result": {"status": "pending", "charge_id": "ch_777", "amount_cents": 500}}))
    printed: list[str] = []
    report = job.run(env, fake_session(), _now_covering(world), say=printed.append)
    (finding,) = report.findings
    assert (finding.kind, finding.what, finding.command) == (
        "pending", waiting.uri, f"python -m idem settle --stack idem-test --key {key}")
    # the provider holds no ch_777: the finding names it and says no charge of it was read (not "processing")
    assert "ch_777" in finding.detail and "processing" not in finding.detail
    metrics = json.loads(printed[0])
    assert metrics["PendingUnsettled"] == 1 and metrics["Differences"] == 1  # the Differences alarm fires


def test_a_retried_put_of_a_booked_order_is_not_an_upload_without_a_line():
    # the record of an upload booked before the window holds: its GetItem says done
    upload = job.UploadSeen("b", "alice/1.json", "v2", "e", 100.0)
    report = job.compare([], [], 0.0, 3600.0, [(upload, "charge#order#k")],
                         status_of=lambda key: ("done", {}))
    assert report.findings == []
    report = job.compare([], [], 0.0, 3600.0, [(upload, "charge#order#k")], status_of=lambda key: ("", {}))
    assert [f.kind for f in report.findings] == ["missing_line"]


def test_an_upload_with_no_readable_order_id_is_reported_and_not_settled_by_key(stand_in):
    world, _ = stand_in
    obj = world.upload("carol/order.json", b"{\"amount_cents\": 100}")
    seen = job.UploadSeen(world.bucket, obj.key, obj.version_id, obj.etag, 0)
    assert job.order_key(world.s3, seen, "order-id") == ""
    (finding,) = job.compare([], [], 0.0, 1.0, [(seen, "")]).findings
    assert finding.kind == "missing_line" and "no readable order_id" in finding.detail


def test_the_order_key_is_the_one_orders_md_names(stand_in):
    world, _ = stand_in
    obj = world.upload("carol/order.json", json.dumps({"order_id": "A-1001", "amount_cents": 1250}).encode())
    seen = job.UploadSeen(world.bucket, obj.key, obj.version_id, obj.etag, 0)
    handler = identify(Upload(world.bucket, obj.key, obj.version_id, obj.etag, ""), "order-id", world.s3)
    assert job.order_key(world.s3, seen, "order-id") == handler.idempotency_key
    assert handler.idempotency_key.startswith("charge#order#") and handler.problem is None
    by_name = hashlib.sha256(f"{world.bucket}\ncarol/order.json".encode()).hexdigest()
    assert job.order_key(world.s3, seen, "object-name") == f"charge#name#{by_name}"


def test_keyed_writes_booked_day_on_its_lines(stand_in):
    world, _ = stand_in
    runtime = LocalLambda(world, world.env("keyed"))
    runtime.send(world.event(upload(world, "bob/order-1.txt")))
    runtime.run()
    lines = [from_item(i) for i in world.table_items(world.ledger_table)]
    fresh = [line for line in lines if line.get("status") == "done" and line.get("account") == "bob"]
    assert fresh and all(line.get("booked_day") == job.day_of(line["booked_at"]) for line in fresh)


def test_the_ledger_is_read_by_query_on_the_day_index_never_scan(stand_in):
    world, env = stand_in
    session = fake_session()
    calls = _record_calls(session)
    job.run(env, session, _now_covering(world), say=lambda _: None)
    operations = {(service, operation) for service, operation, _ in calls}
    assert ("dynamodb", "Query") in operations
    assert not any(op == "Scan" and params["TableName"] == world.ledger_table for _, op, params in calls)


def test_a_bucket_past_the_listing_limit_asks_for_s3_inventory(stand_in):
    world, _ = stand_in
    with pytest.raises(job.TooManyVersions, match="UPLOAD_INVENTORY"):
        job.listed_uploads(world.s3, world.bucket, 0, 1e12, limit=1)


def test_an_inventory_report_is_read_from_its_manifest(stand_in):
    world, env = stand_in
    reports = env["REPORT_BUCKET"]
    rows = [f'"{world.bucket}","alice/order%2B1.txt","v1","true","false","5","2026-11-06T21:32:00.000Z","abc"',
            f'"{world.bucket}","alice/old.txt","v0","false","false","5","2026-11-05T10:00:00.000Z","def"',
            f'"{world.bucket}","alice/gone.txt","v9","true","true","","2026-11-06T21:40:00.000Z",""']
    data = "inv/files/part-1.csv.gz"
    world.s3.put_object(Bucket=reports, Key=data, Body=gzip.compress("\n".join(rows).encode()))
    manifest = {"sourceBucket": world.bucket, "destinationBucket": f"arn:aws:s3:::{reports}",
                "fileFormat": "CSV", "files": [{"key": data, "size": 1}],
                "fileSchema": "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag"}
    key = f"inv/{world.bucket}/all/2026-11-07T00-00Z/manifest.json"
    world.s3.put_object(Bucket=reports, Key=key, Body=json.dumps(manifest).encode())
    newest = job.newest_manifest(world.s3, reports, "inv/")
    assert newest is not None and newest[0] == key and job.iso(newest[1]) == "2026-11-07T00:00:00Z"
    start = float(calendar.timegm((2026, 11, 6, 0, 0, 0)))
    found = job.inventory_uploads(world.s3, reports, key, start, start + 86400)
    assert [(u.key, u.version_id, u.etag, job.iso(u.at)) for u in found] == [
        ("alice/order+1.txt", "v1", "abc", "2026-11-06T21:32:00Z")]


@pytest.mark.parametrize("profile", ["demo", "prod"])
def test_every_call_the_reconciler_makes_is_granted_and_nothing_more(stand_in, profile, monkeypatch):
    world, env = stand_in
    upload(world, "carol/order-3.txt")  # an upload with no line: its record is read by key
    session = fake_session()
    names = {world.ledger_table: "LedgerTable", world.provider_table: "ProviderTable", world.bucket: "UploadBucket",
             env["REPORT_BUCKET"]: "ReportBucket", "/idem/stripe/secret-key": "StripeSecretParameter"}
    if profile == "prod":
        ssm = session.client("ssm")
        ssm.put_parameter(Name="/idem/stripe/secret-key", Value="sk_test_x", Type="SecureString")
        env = {**env, "STRIPE_SECRET_PARAMETER": "/idem/stripe/secret-key"}
        env.pop("PROVIDER_TABLE")
    env = {**env, "ORDER_IDENTITY": "order-id"}  # reads each upload's order_id, by its version
    calls = _record_calls(session)
    job.run(env, session, _now_covering(world), say=lambda line: None,
            fetch=lambda request: {"data": [], "has_more": False})
    if profile == "prod":  # and once the bucket is past the listing limit: from the inventory
        monkeypatch.setattr(job, "MAX_LISTED_VERSIONS", 1)
        env = {**env, "UPLOAD_INVENTORY": plant_inventory(world, env["REPORT_BUCKET"], _now_covering(world) + 7200)}
        job.run(env, session, _now_covering(world) + 7200, say=lambda line: None,
                fetch=lambda request: {"data": [], "has_more": False})
        assert ("s3", "ListObjectsV2") in {(service, op) for service, op, _ in calls}
    used = {_iam(call, names) for call in calls}
    cfn = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {"Profile": profile})
    granted = tp.role_grants(cfn, "ReconcileFunctionRole")
    assert used <= granted, f"calls the role does not allow: {used - granted}"
    assert granted - used <= SERVICE_GRANTS, f"grants nothing uses: {granted - used - SERVICE_GRANTS}"
    if profile == "prod":
        session.client("ssm").delete_parameter(Name="/idem/stripe/secret-key")


INVENTORY_SCHEMA = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag"


def plant_inventory(world: LocalWorld, reports: str, made_at: float) -> str:
    """A daily S3 Inventory of the world's upload bucket as S3 delivers it (every version, CSV,
    gzipped) under template.yaml's layout, its scan begun at `made_at`; returns UPLOAD_INVENTORY."""
    versions = world.s3.list_object_versions(Bucket=world.bucket).get("Versions", [])
    rows = [",".join(f'"{v}"' for v in (world.bucket, urllib.parse.quote_plus(o["Key"]), o["VersionId"],
                                         str(o["IsLatest"]).lower(), "false", o["Size"],
                                         o["LastModified"].strftime("%Y-%m-%dT%H:%M:%S.000Z"), o["ETag"].strip('"')))
            for o in versions]
    prefix = f"inventory/{world.bucket}/uploads/"
    data = f"{prefix}data/{len(rows)}.csv.gz"
    world.s3.put_object(Bucket=reports, Key=data, Body=gzip.compress("\n".join(rows).encode()))
    stamp = job.iso(made_at)[:16].replace(":", "-") + "Z"
    world.s3.put_object(Bucket=reports, Key=f"{prefix}{stamp}/manifest.json", Body=json.dumps({
        "sourceBucket": world.bucket, "destinationBucket": f"arn:aws:s3:::{reports}", "fileFormat": "CSV",
        "fileSchema": INVENTORY_SCHEMA, "files": [{"key": data, "size": 1}]}).encode())
    return f"{reports}/{prefix}"


def test_a_small_bucket_is_listed_even_where_an_inventory_is_configured(stand_in):
    world, env = stand_in
    env = {**env, "UPLOAD_INVENTORY": f"{env['REPORT_BUCKET']}/inventory/{world.bucket}/uploads/"}  # none yet
    report = job.run(env, fake_session(), _now_covering(world), say=lambda _: None)
    assert (report.uploads, report.differences) == (2, 0)
    assert not job.reads_inventory(world.dynamodb, world.ledger_table)


def test_past_the_listing_limit_the_job_reads_the_inventory_and_never_lists_again(stand_in, monkeypatch):
    world, env = stand_in
    monkeypatch.setattr(job, "MAX_LISTED_VERSIONS", 1)
    env = {**env, "UPLOAD_INVENTORY": f"{env['REPORT_BUCKET']}/inventory/{world.bucket}/uploads/"}
    with pytest.raises(RuntimeError, match="no S3 Inventory manifest"):  # none delivered yet: the cursor waits
        job.run(env, fake_session(), _now_covering(world), say=lambda _: None)
    assert job.read_cursor(world.dynamodb, world.ledger_table) is None
    assert job.reads_inventory(world.dynamodb, world.ledger_table)  # remembered: the bucket only grows
    lost = upload(world, "carol/order-3.txt")  # an upload with no line, seen through the inventory
    plant_inventory(world, env["REPORT_BUCKET"], _now_covering(world))
    session = fake_session()
    calls = _record_calls(session)
    report = job.run(env, session, _now_covering(world), say=lambda _: None)
    assert report.uploads == 3 and [(f.kind, f.what) for f in report.findings] == [("missing_line", lost.uri)]
    assert not any(op == "ListObjectVersions" for _, op, _ in calls)
    assert job.read_cursor(world.dynamodb, world.ledger_table) == report.end
    # a person's rerun of that window reads the inventory too
    again = job.rerun(env, fake_session(), job.iso(report.start), say=lambda _: None)
    assert (again.uploads, again.differences) == (3, 1)


def test_a_run_that_catches_up_reads_the_inventory_once(stand_in, monkeypatch):
    world, env = stand_in
    monkeypatch.setattr(job, "MAX_LISTED_VERSIONS", 1)
    env = {**env, "UPLOAD_INVENTORY": plant_inventory(world, env["REPORT_BUCKET"], _now_covering(world) + 5 * 3600)}
    job.mark_inventory(world.dynamodb, world.ledger_table)
    assert job.run(env, fake_session(), _now_covering(world), say=lambda _: None).uploads == 2
    session = fake_session()
    calls = _record_calls(session)
    printed: list[str] = []
    job.run(env, session, _now_covering(world) + 5 * 3600, say=printed.append)
    assert len(printed) == 5  # five windows, one report each ...
    manifests = [p for _, op, p in calls if op == "GetObject" and p["Key"].endswith("manifest.json")]
    assert len(manifests) == 1  # ... from one reading of the inventory


def test_the_prod_template_delivers_the_inventory_where_the_reconciler_reads_it():
    cfn = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {"Profile": "prod"})
    resources = cfn["Resources"]
    (inventory,) = resources["UploadBucket"]["Properties"]["InventoryConfigurations"]
    assert (inventory["IncludedObjectVersions"], inventory["ScheduleFrequency"], inventory["Destination"]["Format"]) == (
        "All", "Daily", "CSV")
    fields = [c.strip() for c in INVENTORY_SCHEMA.split(",")]
    assert set(inventory["OptionalFields"]) == set(fields) - {"Bucket", "Key", "VersionId", "IsLatest", "IsDeleteMarker"}
    reports = resources["ReportBucket"]["Properties"]["BucketName"]["Fn::Sub"]
    uploads = resources["UploadBucket"]["Properties"]["BucketName"]["Fn::Sub"]
    assert inventory["Destination"]["BucketArn"]["Fn::Sub"] == f"arn:${{AWS::Partition}}:s3:::{reports}"
    env = resources["ReconcileFunction"]["Properties"]["Environment"]["Variables"]
    # destination-prefix/source-bucket/config-ID/: where S3 puts the manifests
    assert env["UPLOAD_INVENTORY"]["Fn::Sub"] == f"{reports}/{inventory['Destination']['Prefix']}/{uploads}/{inventory['Id']}/"
    policy = resources["ReportBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    (delivery,) = [s for s in policy if s.get("Sid") == "UploadInventory"]
    assert (delivery["Effect"], delivery["Principal"], delivery["Action"]) == (
        "Allow", {"Service": "s3.amazonaws.com"}, "s3:PutObject")
    assert delivery["Resource"]["Fn::Sub"] == f"arn:${{AWS::Partition}}:s3:::{reports}/{inventory['Destination']['Prefix']}/*"
    assert delivery["Condition"]["ArnLike"]["aws:SourceArn"]["Fn::Sub"] == f"arn:${{AWS::Partition}}:s3:::{uploads}"
    grants = tp.role_grants(cfn, "ReconcileFunctionRole")
    assert {("s3:ListBucket", "ReportBucket"), ("s3:GetObject", "ReportBucket/inventory/*")} <= grants
    demo = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {"Profile": "demo"})["Resources"]
    assert "InventoryConfigurations" not in demo["UploadBucket"]["Properties"]
    assert "UPLOAD_INVENTORY" not in demo["ReconcileFunction"]["Properties"]["Environment"]["Variables"]


def test_the_cursor_is_the_only_ledger_item_the_reconciler_may_write():
    cfn = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {"Profile": "prod"})
    (statement,) = [s for p in cfn["Resources"]["ReconcileFunctionRole"]["Properties"]["Policies"]
                    for s in p["PolicyDocument"]["Statement"] if s.get("Sid") == "Cursor"]
    assert statement["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [job.CURSOR_KEY]}}


def test_the_template_index_and_lag_match_the_code():
    from idem.core.buffer import PROD
    from idem.sim.world import LEDGER_TABLE_SHAPE

    cfn = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {"Profile": "prod"})
    ledger = cfn["Resources"]["LedgerTable"]["Properties"]
    (index,) = [i for i in ledger["GlobalSecondaryIndexes"] if i["IndexName"] == job.DAY_INDEX]
    (local,) = [i for i in LEDGER_TABLE_SHAPE["GlobalSecondaryIndexes"] if i["IndexName"] == job.DAY_INDEX]
    assert index == local
    env = cfn["Resources"]["ReconcileFunction"]["Properties"]["Environment"]["Variables"]
    assert int(env["RECONCILE_LAG_SECONDS"]) == PROD.reconcile_lag_seconds


# -- Stripe's search ------------------------------------------------------------------------------
def test_stripe_charges_searches_this_stacks_intents_pages_on_and_authenticates_with_the_key():
    mine = {"idem_stack": "shop", "account": "alice", "idempotency_key": "charge#order#1",
            "bucket": "up", "order_id": "A-1"}
    pages = [
        {"data": [{"id": "pi_a", "status": "succeeded", "amount": 500, "amount_received": 500,
                   "created": 10, "metadata": mine, "customer": "cus_1"},
                  {"id": "pi_b", "status": "requires_payment_method", "amount": 500, "created": 11,
                   "metadata": mine},
                  {"id": "pi_x", "status": "succeeded", "amount": 500, "created": 11,
                   "metadata": {**mine, "idem_stack": "other"}}],
         "has_more": True, "next_page": "page_2"},
        {"data": [{"id": "pi_c", "status": "succeeded", "amount": 300, "created": 12,
                   "metadata": {"idem_stack": "shop"}, "customer": "cus_2"}], "has_more": False,
         "next_page": None},
    ]
    asked: list[Any] = []

    def fetch(request):
        asked.append(request)
        return pages[len(asked) - 1]

    found = job.stripe_charges("sk_test_123", "shop", 0, 3600, fetch)
    assert [(e.charge_id, e.account, e.cents, e.key, e.order) for e in found] == [
        ("pi_a", "alice", 500, "charge#order#1", "s3://up#order=A-1"), ("pi_c", "cus_2", 300, "", "")]
    first, second = (urllib.parse.parse_qs(urllib.parse.urlparse(r.full_url).query) for r in asked)
    assert first == {"query": ["metadata['idem_stack']:'shop' AND created>=0 AND created<3600"], "limit": ["100"]}
    assert second["page"] == ["page_2"]
    assert asked[0].full_url.startswith("https://api.stripe.com/v1/payment_intents/search?")
    assert asked[0].get_header("Authorization") == "Bearer sk_test_123"
    with pytest.raises(ValueError, match="STACK_NAME"):
        job.stripe_charges("sk", "", 0, 1, fetch)


def test_a_missing_setting_names_itself():
    with pytest.raises(RuntimeError, match="REPORT_BUCKET, PROVIDER_TABLE or STRIPE_SECRET_PARAMETER"):
        job.run({"LEDGER_TABLE": "t"}, fake_session(), 0.0)


# -- the prod profile against the loopback Stripe --------------------------------------------
def test_the_prod_profile_reads_only_this_stacks_charges_by_stripe_search():
    import stripe

    from idem.sim.stripe.server import loopback_stripe, seed_customer

    with LocalWorld(prefix="reconcile-stripe") as world, loopback_stripe(world) as server:
        client = stripe.StripeClient("sk_test_recon", base_addresses={"api": server.url}, max_network_retries=0)
        method = seed_customer(server, customer_id="cus_alice")[1]
        order = upload(world, "alice/A-1.json", json.dumps({"order_id": "A-1", "amount_cents": 500}).encode())
        key = job.order_key(world.s3, job.UploadSeen(world.bucket, order.key, order.version_id, order.etag, 0))

        def intent(stack: str, idempotency_key: str, order_id: str = "A-1") -> str:
            return str(client.v1.payment_intents.create(params={
                "amount": 500, "currency": "usd", "confirm": True, "off_session": True,
                "payment_method": method, "customer": "cus_alice",
                "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
                "metadata": {"idem_stack": stack, "idempotency_key": key, "order_id": order_id,
                             "bucket": world.bucket, "idem_account": "alice"}},
                options={"idempotency_key": idempotency_key}).id)

        first = intent("idem-test", key)
        second = intent("idem-test", key + "#pruned")  # the same order charged again
        intent("someone-else", "charge#order#theirs", "Z-9")  # another stack's: not ours to judge
        now = world.clock.now()
        world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({
            "pk": key, "status": "done", "account": "alice", "cents": 500, "charge_id": first,
            "booked_at": now, "booked_day": job.day_of(now)}))  # and alice's customer mapping (BRIEF decision 2):
        world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({"pk": "account#alice", "kind": "customer", "customer": "cus_alice"}))
        reports = f"{world.prefix}-reports"
        world.s3.create_bucket(Bucket=reports)
        ssm = world.session.client("ssm")
        ssm.put_parameter(Name="/recon/stripe", Value="sk_test_recon", Type="SecureString")
        try:
            env = {"LEDGER_TABLE": world.ledger_table, "REPORT_BUCKET": reports, "WINDOW_MINUTES": "60",
                   "STRIPE_SECRET_PARAMETER": "/recon/stripe", "STRIPE_API_BASE": server.url,
                   "STACK_NAME": "idem-test", "UPLOAD_BUCKET": world.bucket, "RECONCILE_LAG_SECONDS": str(LAG)}
            report = job.run(env, fake_session(), _now_covering(world), say=lambda _: None)
        finally:
            ssm.delete_parameter(Name="/recon/stripe")
            for item in world.s3.list_objects_v2(Bucket=reports).get("Contents", []):
                world.s3.delete_object(Bucket=reports, Key=item["Key"])
            world.s3.delete_bucket(Bucket=reports)
        assert (report.uploads, report.ledger_lines, report.provider_charges) == (1, 1, 2)
        assert [(f.kind, f.what, f.command) for f in report.findings] == [
            ("double", second, f"python -m idem refund --stack idem-test --charge {second}")]
        searched = [path for method, path in server.requests if path == "/v1/payment_intents/search"]
        assert searched  # read by search, filtered at Stripe by the stack's metadata


def test_a_run_that_catches_up_lists_the_bucket_once(stand_in):
    world, env = stand_in
    job.run(env, fake_session(), _now_covering(world), say=lambda _: None)
    session = fake_session()
    calls = _record_calls(session)
    printed: list[str] = []
    job.run(env, session, _now_covering(world) + 5 * 3600, say=printed.append)
    assert len(printed) == 5
    assert sum(op == "ListObjectVersions" for _, op, _ in calls) == 1


@pytest.mark.parametrize("profile", ["demo", "prod"])
def test_the_reconciler_keys_orders_as_the_charge_function_does(profile):
    cfn = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {"Profile": profile})
    charge = cfn["Resources"]["ChargeFunction"]["Properties"]["Environment"]["Variables"]
    mine = cfn["Resources"]["ReconcileFunction"]["Properties"]["Environment"]["Variables"]
    assert mine.get("ORDER_IDENTITY") == charge.get("ORDER_IDENTITY")
    if profile == "demo":  # the demo's handlers key by upload
        assert (charge.get("KEY_RECIPE"), mine.get("ORDER_IDENTITY")) == ("version", "upload")
    else:  # the handler to copy keys one charge per order (its default, order-id): so does the reconciler
        assert "ORDER_IDENTITY" not in charge and "ORDER_IDENTITY" not in mine


def test_a_person_reruns_one_past_window_and_the_cursor_stays(stand_in):
    world, env = stand_in
    first = job.run(env, fake_session(), _now_covering(world), say=lambda _: None)
    later = job.run(env, fake_session(), _now_covering(world) + 2 * 3600, say=lambda _: None)
    cursor = job.read_cursor(world.dynamodb, world.ledger_table)
    upload(world, "carol/late.txt")  # an upload the first window's report did not see: planted in its hour
    again = job.rerun(env, fake_session(), job.iso(first.start), say=lambda _: None)
    assert (again.start, again.end) == (first.start, first.end) and again.count("missing_line") == 1
    assert job.read_cursor(world.dynamodb, world.ledger_table) == cursor == later.end
    with pytest.raises(ValueError, match="whole multiples"):
        job.rerun(env, fake_session(), job.iso(first.start + 60))


def test_a_run_out_of_time_stops_between_windows_and_the_next_carries_on(stand_in):
    world, env = stand_in
    first = job.run(env, fake_session(), _now_covering(world), say=lambda _: None)
    printed: list[str] = []
    job.run(env, fake_session(), _now_covering(world) + 4 * 3600, say=printed.append, out_of_time=lambda: True)
    assert len(printed) == 1 and job.read_cursor(world.dynamodb, world.ledger_table) == first.end + 3600
    job.run(env, fake_session(), _now_covering(world) + 4 * 3600, say=printed.append)
    assert len(printed) == 4 and job.read_cursor(world.dynamodb, world.ledger_table) == first.end + 4 * 3600


def test_a_line_from_before_the_day_index_is_unbooked_until_the_backfill():
    """Every commit writes booked_day, so the day index holds every line. A line from before the
    index (no booked_day) is not in it: its charge is reported unbooked, never assumed booked,
    until backfill_booked_day gives it its day; then the window is clean."""
    with LocalWorld(prefix="reconcile-noday") as world:
        runtime = LocalLambda(world, world.env("keyed"))
        runtime.send(world.event(upload(world, "alice/order-1.txt")))
        runtime.run()
        (line,) = [from_item(i) for i in world.table_items(world.ledger_table) if from_item(i).get("charge_id")]
        world.dynamodb.update_item(TableName=world.ledger_table, Key={"pk": {"S": line["pk"]}},
                                   UpdateExpression="REMOVE booked_day")  # as an older ledger's line
        (recipe,) = {from_item(i)["pk"].split("#")[1] for i in world.table_items(world.ledger_table)
                     if from_item(i)["pk"].startswith("charge#")}  # not the customer mapping (account#)
        reports = f"{world.prefix}-reports"
        world.s3.create_bucket(Bucket=reports)
        env = {"LEDGER_TABLE": world.ledger_table, "PROVIDER_TABLE": world.provider_table,
               "REPORT_BUCKET": reports, "WINDOW_MINUTES": "60", "MAX_EVENT_AGE_SECONDS": "21600",
               "AWS_LAMBDA_FUNCTION_NAME": "idem-reconcile", "UPLOAD_BUCKET": world.bucket,
               "ORDER_IDENTITY": IDENTITIES[recipe], "STACK_NAME": "idem-test"}
        report = job.run(env, fake_session(), _now_covering(world), say=lambda line: None)
        assert (report.ledger_lines, report.provider_charges) == (0, 1)  # no line in the day index
        assert [c.charge_id for c in report.unbooked] == [line["charge_id"]]
        assert job.backfill_booked_day(world.dynamodb, world.ledger_table) == 1
        report = job.rerun(env, fake_session(), job.iso(report.start), say=lambda line: None)
        assert (report.ledger_lines, report.provider_charges) == (1, 1)
        assert report.unbooked == [] and report.differences == 0, report.render()
