"""The context version's triggers on memory items and snapshots (`conversations.context_version`)."""

from django.db import migrations

from conversations import context_version

TABLES = {"memory_memoryitem": None, "memory_memorysnapshot": None}


def install(apps, schema_editor):
    context_version.install(schema_editor, TABLES)


def uninstall(apps, schema_editor):
    context_version.uninstall(schema_editor, TABLES)


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0010_customer_context_version"),
        ("memory", "0007_message_recall_features"),
    ]

    operations = [migrations.RunPython(install, uninstall)]
