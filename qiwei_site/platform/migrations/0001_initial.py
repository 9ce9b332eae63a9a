"""The account registry moves from `conversations` to the platform: state only, the tables
(`conversations_wecomaccount`, `conversations_accountmembership`) and their rows stay where they are."""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ("wecomaccount", "accountmembership")


def _relabel(apps, schema_editor, old, new):
    # Admin permissions and log entries point at content types: keep them on the moved models.
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        if not ContentType.objects.using(db).filter(app_label=new, model=model).exists():
            ContentType.objects.using(db).filter(app_label=old, model=model).update(app_label=new)


def move_content_types(apps, schema_editor):
    _relabel(apps, schema_editor, "conversations", "platform")


def unmove_content_types(apps, schema_editor):
    _relabel(apps, schema_editor, "platform", "conversations")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('contenttypes', '0002_remove_content_type_name'),
        ('conversations', '0004_account_id_without_hyphen'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='WeComAccount',
                    fields=[
                        ('created_at', models.DateTimeField(auto_now_add=True, db_index=True, verbose_name='创建时间')),
                        ('updated_at', models.DateTimeField(auto_now=True, verbose_name='更新时间')),
                        ('id', models.CharField(max_length=40, primary_key=True, serialize=False, validators=[django.core.validators.RegexValidator('^[a-z0-9][a-z0-9_]{0,39}$', '只能使用小写字母、数字和下划线')], verbose_name='账号 ID')),
                        ('name', models.CharField(max_length=100, verbose_name='名称')),
                        ('is_active', models.BooleanField(default=True, verbose_name='启用')),
                    ],
                    options={
                        'verbose_name': '企微账号',
                        'verbose_name_plural': '企微账号',
                        'db_table': 'conversations_wecomaccount',
                        'ordering': ['id'],
                    },
                ),
                migrations.CreateModel(
                    name='AccountMembership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('created_at', models.DateTimeField(auto_now_add=True, db_index=True, verbose_name='创建时间')),
                        ('updated_at', models.DateTimeField(auto_now=True, verbose_name='更新时间')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='account_memberships', to=settings.AUTH_USER_MODEL, verbose_name='用户')),
                        ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='platform.wecomaccount', verbose_name='企微账号')),
                    ],
                    options={
                        'verbose_name': '账号授权',
                        'verbose_name_plural': '账号授权',
                        'db_table': 'conversations_accountmembership',
                        'constraints': [models.UniqueConstraint(fields=('user', 'account'), name='uniq_membership')],
                    },
                ),
            ],
        ),
        migrations.RunPython(move_content_types, unmove_content_types),
    ]
