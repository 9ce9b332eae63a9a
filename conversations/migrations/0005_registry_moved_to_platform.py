"""The account registry now belongs to qiwei_site.platform (state only; no table changes)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0004_account_id_without_hyphen'),
        ('platform', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name='AccountMembership'),
                migrations.DeleteModel(name='WeComAccount'),
            ],
        ),
    ]
