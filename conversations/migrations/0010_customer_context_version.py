"""The per-customer context version (`conversations.context_version`): its table and the triggers
on the conversation tables the context reads (memory's tables get theirs in memory 0008)."""

from django.db import migrations, models

from conversations import context_version

TABLES = {
    "conversations_message": ["customer_id", "direction", "sender", "text", "sent_at", "is_effective"],
    "conversations_customerprofile": None,
    "conversations_task": None,
    "conversations_alert": None,
    "conversations_recommendation": None,
    "conversations_recommendationfeedback": None,
}


def install(apps, schema_editor):
    context_version.install(schema_editor, TABLES)


def uninstall(apps, schema_editor):
    context_version.uninstall(schema_editor, TABLES)


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0009_business_state_writes_and_draft_prompt"),
    ]

    operations = [
        migrations.CreateModel(
            name="CustomerContextVersion",
            fields=[
                ("customer_id", models.BigIntegerField(primary_key=True, serialize=False, verbose_name="客户")),
                ("version", models.BigIntegerField(default=0, verbose_name="上下文版本")),
            ],
            options={"verbose_name": "客户上下文版本", "verbose_name_plural": "客户上下文版本"},
        ),
        migrations.RunPython(install, uninstall),
    ]
