from django.apps import AppConfig


class WeComConfig(AppConfig):
    """WeCom 微信客服 as an upstream: it answers `conversations.gateway` for connected accounts."""

    name = "wecom"
    verbose_name = "企业微信客服"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations.gateway import gateway_resolver_register
        from wecom.gateway import wecom_gateway_for

        gateway_resolver_register(wecom_gateway_for)
