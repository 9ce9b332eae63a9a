from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Operator tooling above every domain app: the §8 smoke check, demo data and their commands."""

    name = "qiwei_site.operations"
    label = "operations"
    verbose_name = "运维"
