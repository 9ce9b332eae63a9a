"""Recall features stored per message (issue 13 item 3, issue 15 item 5): the table, and a backfill
of every existing message in batches by id (SQLite and PostgreSQL alike).

The backfill runs the current tokeniser (`memory.context.recall.recall_features_backfill`) on the
historical models: features are by definition those of the tokeniser in use, and rows of an older
FEATURE_VERSION are recomputed by recall and by the `recall_features_backfill` command, so a later
tokeniser change needs no new migration. Account databases only (AccountRouter.allow_migrate).
"""

import django.db.models.deletion
from django.db import migrations, models

BATCH_SIZE = 1000


def backfill(apps, schema_editor):
    from memory.context.recall import recall_features_backfill

    recall_features_backfill(
        using=schema_editor.connection.alias,
        batch_size=BATCH_SIZE,
        message_model=apps.get_model("conversations", "Message"),
        features_model=apps.get_model("memory", "MessageRecallFeatures"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0008_alert_kind_and_cause"),
        ("memory", "0006_decision_cleared"),
    ]

    operations = [
        migrations.CreateModel(
            name="MessageRecallFeatures",
            fields=[
                (
                    "message",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="recall_features",
                        serialize=False,
                        to="conversations.message",
                        verbose_name="消息",
                    ),
                ),
                ("version", models.PositiveSmallIntegerField(verbose_name="特征版本")),
                ("text_fingerprint", models.CharField(max_length=16, verbose_name="原文指纹")),
                ("features", models.TextField(blank=True, verbose_name="召回特征")),
            ],
            options={
                "verbose_name": "消息召回特征",
                "verbose_name_plural": "消息召回特征",
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
