from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_save


def _token_made(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    """A token just made is one the wrong-token limit must never refuse (it is still checked)."""
    if created:
        from qiwei_site.platform.authentication import token_remember_valid

        token_remember_valid(instance.key)


class PlatformConfig(AppConfig):
    """The floor every app stands on: tenancy, the account registry, errors, API and admin plumbing."""

    name = "qiwei_site.platform"
    label = "platform"
    verbose_name = "账号与权限"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from rest_framework.authtoken.models import Token

        from qiwei_site.platform import account_template  # noqa: F401  registers the template fillers
        from qiwei_site.platform.authentication import token_str

        post_save.connect(_token_made, sender=Token, dispatch_uid="qiwei.token_made")
        Token.__str__ = token_str  # type: ignore[method-assign,assignment]
