from django.apps import AppConfig


class WorkbenchConfig(AppConfig):
    """The 智能会话 page and its read endpoints, above every domain app."""

    name = "qiwei_site.workbench"
    label = "workbench"
    verbose_name = "智能会话"
