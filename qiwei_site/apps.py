from django.apps import AppConfig


class QiweiSiteConfig(AppConfig):
    name = "qiwei_site"
    verbose_name = "企微记忆后台"
