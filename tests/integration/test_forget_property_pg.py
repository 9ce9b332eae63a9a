"""The forget-and-erase property (tests/memory/governance/test_forget_property.py) on PostgreSQL,
in both account layouts: after any sequence of ingests, captures, model turns, item and message
forgets and erasures, no live row of any table of the account database (history, snapshots,
drafts, prompts and audit included), no search result and no stored recall feature holds a
forgotten word.

Live rows only: PostgreSQL keeps dead row versions (and their pg_trgm index entries) until VACUUM
reclaims them, so the raw bytes of its files are not part of the promise here; production runs
VACUUM after forget (README, production deployment). The SQLite run scans the bytes too.
"""

from __future__ import annotations

import os

import pytest
from django.db import connections
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import use_account
from tests.memory.governance.test_forget_property import ForgetAndErase

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("QIWEI_PROPERTY_EXAMPLES", "4"))


class ForgetAndEraseOnPostgres(ForgetAndErase):
    scan_files = False


@pytest.mark.long
@pytest.mark.django_db(transaction=True)
def test_postgres_forgotten_and_erased_words_are_in_no_live_row(postgres_accounts):
    account_id = postgres_accounts("pgforgetprop")
    account_create(account_id=account_id, name="安居客服一部")
    with use_account(account_id) as alias:
        assert connections[alias].vendor == "postgresql"
        run_state_machine_as_test(
            ForgetAndEraseOnPostgres,
            settings=settings(
                max_examples=EXAMPLES,
                stateful_step_count=20,
                deadline=None,
                database=None,
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )
