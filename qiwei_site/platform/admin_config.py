"""Swap Django's admin site for ours (kept apart so it imports no models)."""

from django.contrib.admin.apps import AdminConfig


class QiweiAdminConfig(AdminConfig):
    default_site = "qiwei_site.platform.admin_site.QiweiAdminSite"
