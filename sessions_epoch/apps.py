from django.apps import AppConfig


class SessionsEpochConfig(AppConfig):
    name = "sessions_epoch"
    verbose_name = "模型会话"
