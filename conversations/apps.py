from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "会话与客户"

    def ready(self) -> None:
        from conversations.selectors import sealed_samples
        from qiwei_site.platform.keyfiles import in_use_probe_register
        from qiwei_site.platform.sealing import SEALING

        # Whether sealed originals exist (and one to try the key on): a sealing key is never made
        # while they do, and /readyz and start-up refuse a key that does not open them (issue 36).
        in_use_probe_register(SEALING.purpose, sealed_samples)
