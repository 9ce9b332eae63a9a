"""The audit chain's commit lock names the table's schema too (issue 23): accounts that share one
PostgreSQL database, a schema each, no longer queue behind one another's audit writes. SQLite and
a database per account are unchanged (the function is only replaced on PostgreSQL)."""

from django.db import migrations

from qiwei_site.platform import audit_chain


def refresh(apps, schema_editor):
    audit_chain.refresh_chain_function(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("conversations", "0015_audit_chain")]

    operations = [
        # Routed like 0015's: the audit's function in the account databases, the journal's in `default`.
        migrations.RunPython(refresh, migrations.RunPython.noop, hints={"model_name": "auditevent"}),
        migrations.RunPython(refresh, migrations.RunPython.noop, hints={"model_name": "registryauditevent"}),
    ]
