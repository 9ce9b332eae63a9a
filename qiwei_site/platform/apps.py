from django.apps import AppConfig


class PlatformConfig(AppConfig):
    """The floor every app stands on: tenancy, the account registry, errors, API and admin plumbing."""

    name = "qiwei_site.platform"
    label = "platform"
    verbose_name = "账号与权限"
    default_auto_field = "django.db.models.BigAutoField"
