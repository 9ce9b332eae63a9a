"""The audit becomes append-only and a hash chain (issue 25, item 3; `qiwei_site/platform/audit_chain.py`):
hash columns, the rows written before chained in id order, then the triggers. And the context reads'
table (`ContextRead`), beside the audit in each account database."""

import django.utils.timezone
from django.db import migrations, models

from qiwei_site.platform import audit_chain

BATCH = 1000


def _chain(model_name: str, subject: str):
    def forward(apps, schema_editor):
        model = apps.get_model("conversations", model_name)
        alias = schema_editor.connection.alias
        columns = ["id", "action", "actor_id", "actor_name", "reason", "payload", "created_at", subject]
        rows = list(model.objects.using(alias).order_by("id").values(*columns))
        linked = audit_chain.chain_existing(rows, subject)
        fields = ["payload_hash", "entry_hash", "prev_hash", "chain_hash", "chain_seq"]
        model.objects.using(alias).bulk_update([model(**values) for values in linked], fields, batch_size=BATCH)
        audit_chain.install(schema_editor, model._meta.db_table)

    def backward(apps, schema_editor):
        audit_chain.uninstall(schema_editor, apps.get_model("conversations", model_name)._meta.db_table)

    return forward, backward


AUDIT_FORWARD, AUDIT_BACKWARD = _chain("AuditEvent", "conversation_id")
JOURNAL_FORWARD, JOURNAL_BACKWARD = _chain("RegistryAuditEvent", "account_id")


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0014_draft_failed"),
    ]

    operations = [
        migrations.CreateModel(
            name="ContextRead",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "created_at",
                    models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name="时间"),
                ),
                ("conversation_id", models.CharField(db_index=True, max_length=128, verbose_name="会话 ID")),
                (
                    "purpose",
                    models.CharField(
                        choices=[("draft", "生成草稿（交给模型）"), ("api", "通过接口读取上下文")],
                        max_length=16,
                        verbose_name="用途",
                    ),
                ),
                ("actor_id", models.IntegerField(blank=True, null=True, verbose_name="操作人 ID")),
                ("actor_name", models.CharField(blank=True, max_length=150, verbose_name="操作人")),
                ("reply_to_id", models.BigIntegerField(blank=True, null=True, verbose_name="回复的消息 ID")),
                ("snapshot_version", models.PositiveIntegerField(blank=True, null=True, verbose_name="快照版本")),
                ("item_ids", models.JSONField(blank=True, default=list, verbose_name="记忆条目 ID")),
                ("recalled_message_ids", models.JSONField(blank=True, default=list, verbose_name="召回的消息 ID")),
                ("recent_message_ids", models.JSONField(blank=True, default=list, verbose_name="最近消息 ID")),
                ("session_id", models.CharField(blank=True, max_length=128, verbose_name="模型会话")),
                ("draft_id", models.BigIntegerField(blank=True, null=True, verbose_name="草稿 ID")),
                ("degraded", models.BooleanField(default=False, verbose_name="记忆读取失败时的最小上下文")),
            ],
            options={
                "verbose_name": "上下文读取记录",
                "verbose_name_plural": "上下文读取记录",
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.AddField(
            model_name="auditevent",
            name="chain_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64, verbose_name="链哈希"),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="chain_seq",
            field=models.PositiveBigIntegerField(
                blank=True, editable=False, null=True, unique=True, verbose_name="链序号"
            ),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="entry_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64, verbose_name="记录哈希"),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="payload_hash",
            field=models.CharField(
                blank=True, default="", editable=False, max_length=64, verbose_name="原因与详情的哈希"
            ),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="prev_hash",
            field=models.CharField(
                blank=True, default="", editable=False, max_length=64, verbose_name="前一行的链哈希"
            ),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="scrubbed_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64, verbose_name="清理后的哈希"),
        ),
        migrations.AddField(
            model_name="registryauditevent",
            name="chain_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64, verbose_name="链哈希"),
        ),
        migrations.AddField(
            model_name="registryauditevent",
            name="chain_seq",
            field=models.PositiveBigIntegerField(
                blank=True, editable=False, null=True, unique=True, verbose_name="链序号"
            ),
        ),
        migrations.AddField(
            model_name="registryauditevent",
            name="entry_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64, verbose_name="记录哈希"),
        ),
        migrations.AddField(
            model_name="registryauditevent",
            name="payload_hash",
            field=models.CharField(
                blank=True, default="", editable=False, max_length=64, verbose_name="原因与详情的哈希"
            ),
        ),
        migrations.AddField(
            model_name="registryauditevent",
            name="prev_hash",
            field=models.CharField(
                blank=True, default="", editable=False, max_length=64, verbose_name="前一行的链哈希"
            ),
        ),
        migrations.AddField(
            model_name="registryauditevent",
            name="scrubbed_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64, verbose_name="清理后的哈希"),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="created_at",
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name="时间"),
        ),
        migrations.AlterField(
            model_name="registryauditevent",
            name="created_at",
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name="时间"),
        ),
        # `hints` route each to its database: the audit to the account databases, the journal to `default`.
        migrations.RunPython(AUDIT_FORWARD, AUDIT_BACKWARD, hints={"model_name": "auditevent"}),
        migrations.RunPython(JOURNAL_FORWARD, JOURNAL_BACKWARD, hints={"model_name": "registryauditevent"}),
    ]
