"""Session search indexes over `conversations_message.text` (memory/context/search.py).

SQLite: an FTS5 `trigram` virtual table over the message table (external content, rowid = id),
kept in sync by insert/delete/update triggers and backfilled from the existing rows.
PostgreSQL: the `pg_trgm` extension and a GIN trigram index; if the extension cannot be created
(no privilege), search still works by ILIKE, only without the index.

Account databases only: RunPython has no model, so AccountRouter.allow_migrate(db, "memory")
allows it on `acct_*` databases and not on `default`. Written with IF NOT EXISTS, so a database
whose index was already built at run time by the old lazy set-up migrates cleanly.
"""

import logging

from django.db import migrations, transaction

logger = logging.getLogger(__name__)

FTS_TABLE = "memory_message_fts"
PG_INDEX = "memory_message_text_trgm"

SQLITE_CREATE = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    "text, content='conversations_message', content_rowid='id', tokenize='trigram')",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ai AFTER INSERT ON conversations_message BEGIN "
    f"INSERT INTO {FTS_TABLE}(rowid, text) VALUES (new.id, new.text); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ad AFTER DELETE ON conversations_message BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, text) VALUES ('delete', old.id, old.text); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_au AFTER UPDATE OF text ON conversations_message BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, text) VALUES ('delete', old.id, old.text); "
    f"INSERT INTO {FTS_TABLE}(rowid, text) VALUES (new.id, new.text); END",
    # Backfill: index the messages that exist already.
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
]
SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_ai",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_ad",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_au",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]
POSTGRES_CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON conversations_message USING gin (text gin_trgm_ops)",
]


def create_search_index(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "sqlite":
        for statement in SQLITE_CREATE:
            schema_editor.execute(statement)
    elif connection.vendor == "postgresql":
        try:
            # A savepoint, so that a refused CREATE EXTENSION leaves the migration's transaction usable.
            with transaction.atomic(using=connection.alias):
                for statement in POSTGRES_CREATE:
                    schema_editor.execute(statement)
        except Exception:
            logger.exception("search: pg_trgm index could not be created on %s", connection.alias)


def drop_search_index(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)
    elif connection.vendor == "postgresql":
        # The extension stays: other objects may use it.
        schema_editor.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0005_registry_moved_to_platform"),
        ("memory", "0003_chinese_labels"),
    ]

    operations = [
        migrations.RunPython(create_search_index, drop_search_index),
    ]
