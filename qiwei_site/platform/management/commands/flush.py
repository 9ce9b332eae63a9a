"""Django's `flush`, able to empty the append-only audit tables: emptying a whole database (tests
between cases, an operator starting over) is not an edit of the audit, so it runs inside the audit
unlock (`qiwei_site.platform.audit_chain`). PostgreSQL's flush truncates, which the row triggers
do not see; SQLite's deletes row by row."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import flush

from qiwei_site.platform.audit_chain import FLUSH, audit_unlocked, unlock_table_exists


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        database = options["database"]
        if not unlock_table_exists(database):
            super().handle(**options)
            return
        with audit_unlocked(FLUSH, using=database):
            super().handle(**options)
