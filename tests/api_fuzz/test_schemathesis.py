"""Every operation of the OpenAPI schema, fuzzed by the schemathesis CLI against a live server on
127.0.0.1 with a staff token: no 5xx, and every answer matches its documented status code,
content type and schema. Deterministic (fixed seed) and bounded (examples per operation, timeout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.api_fuzz.conftest import write_ids

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).with_name("schemathesis.toml")
MAX_EXAMPLES = os.environ.get("QIWEI_FUZZ_MAX_EXAMPLES", "20")
TIMEOUT_SECONDS = int(os.environ.get("QIWEI_FUZZ_TIMEOUT", "600"))


def schemathesis_command(schema_url: str, token: str, report_dir: Path) -> list[str]:
    # Checks, phases and bounds live in schemathesis.toml, shared with scripts/schemathesis.sh.
    return [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(CONFIG),
        "run",
        schema_url,
        "--header",
        f"Authorization: Token {token}",
        "--max-examples",
        MAX_EXAMPLES,
        "--report",
        "junit",
        "--report-dir",
        str(report_dir),
        "--no-color",
    ]


def summarize(stats_file: Path) -> dict[str, Counter]:
    """Calls per phase and status class, per operation; printed so a run shows how deep it went."""
    by_operation: dict[str, Counter] = {}
    for line in stats_file.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        counter = by_operation.setdefault(record["operation"], Counter())
        counter[f"{record['status'] // 100}xx"] += 1
        counter[record["phase"] or "?"] += 1
    total = Counter()
    for counter in by_operation.values():
        total.update(counter)
    print(f"\nschemathesis: {sum(total[k] for k in ('2xx', '4xx', '5xx'))} calls over {len(by_operation)} operations")
    print("  by status class:", {k: total[k] for k in ("2xx", "4xx", "5xx")})
    print("  by phase:", {k: v for k, v in total.items() if not k.endswith("xx")})
    for operation, counter in sorted(by_operation.items()):
        calls = counter["2xx"] + counter["4xx"] + counter["5xx"]
        print(f"  {operation}: {calls} calls, {counter['2xx']} 2xx, {counter['4xx']} 4xx, {counter['5xx']} 5xx")
    return by_operation


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_api_schema_fuzz_finds_no_server_error_or_schema_mismatch(fuzz_server, seeded, tmp_path):
    # given a live server whose account `acme` holds realistic data, and a staff token
    ids_file = write_ids(seeded, tmp_path / "ids.json")
    stats_file = tmp_path / "calls.jsonl"
    env = {
        **os.environ,
        "QIWEI_FUZZ_IDS": str(ids_file),
        "QIWEI_FUZZ_STATS": str(stats_file),
    }
    command = schemathesis_command(f"{fuzz_server.url}/api/schema/?format=json", seeded.token, tmp_path / "report")

    # when schemathesis exercises every operation of the served schema
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
    )

    # then every check passed on every operation, and no call was a server error
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    print("\n".join(output.splitlines()[-25:]))
    by_operation = summarize(stats_file)
    assert not [op for op, counter in by_operation.items() if counter["5xx"]]
