"""Swap Django's admin site for ours, and name django-axes in Chinese (kept apart so it imports no models)."""

from axes.apps import AppConfig as AxesAppConfig
from django.contrib.admin.apps import AdminConfig


class QiweiAdminConfig(AdminConfig):
    default_site = "qiwei_site.platform.admin_site.QiweiAdminSite"


class LoginProtectionConfig(AxesAppConfig):
    """django-axes under a Chinese name on every admin page (the library sets none; its model and
    field names are translated in locale/zh_Hans)."""

    verbose_name = "登录保护"
