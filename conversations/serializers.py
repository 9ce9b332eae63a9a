"""Conversations' output serializers shared by every interface that shows a draft, a task, an alert
or a recommendation (this app's API, the turn API in sessions_epoch, the Workbench), and the masked
text field every message quote goes through. Interfaces import these, never another app's views."""

from __future__ import annotations

from typing import Any

from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from conversations.gateway import get_gateway
from conversations.models import (
    Alert,
    Delivery,
    Draft,
    DraftStatus,
    Recommendation,
    RecommendationFeedback,
    RecommendationStatus,
    Task,
    TaskStatus,
)
from conversations.selectors import recommendation_latest_feedback
from qiwei_site.reading.masking import mask_sensitive


class MaskedTextField(serializers.CharField):
    """A message's text as people and clients see it: credentials and personal numbers masked
    (`qiwei_site.reading.masking`); the stored message stays as received."""

    def to_representation(self, value: Any) -> str:
        return mask_sensitive(str(value))


class DeliveryOutputSerializer(serializers.ModelSerializer):
    draft_id = serializers.IntegerField()
    status_label = serializers.CharField(source="get_status_display")

    class Meta:
        model = Delivery
        fields = [
            "id",
            "draft_id",
            "idempotency_key",
            "status",
            "status_label",
            "upstream_id",
            "text",
            "auto",
            "attempts",
            "last_error",
            "sent_at",
            "created_at",
        ]


class DraftOutputSerializer(serializers.ModelSerializer):
    """A draft as the API, the Workbench and the review queue show it (one serializer for all)."""

    status_label = serializers.CharField(source="get_status_display")
    conversation_id = serializers.CharField(source="customer.conversation_id")
    reply_to_message_id = serializers.IntegerField(source="reply_to_id", allow_null=True)
    reasons = serializers.ListField(child=serializers.CharField())
    profile_updates = serializers.DictField(child=serializers.CharField())
    dropped_updates = serializers.ListField(child=serializers.DictField())
    context_trace = serializers.SerializerMethodField(
        help_text="本轮上下文的追踪（ids 与各段字数）；模型出错时的原始应答不在此处 (no raw model error body)"
    )
    delivery = serializers.SerializerMethodField()
    prompt_available = serializers.SerializerMethodField(help_text="是否保存了模型收到的提示词（见 …/prompt/）")
    send_blocked_reason = serializers.SerializerMethodField(
        help_text="上游此刻不允许发送这条回复的原因（如企业微信的 48 小时、5 条限制）；可发送时为 null"
    )

    def get_context_trace(self, draft: Draft) -> dict[str, Any]:
        """The trace without the model's raw error words (`model.error_detail`, which may echo the
        customer or the prompt): the agent reads the Chinese summary in `error`; staff read the raw
        words on the draft's trace page in admin."""
        trace = draft.context_trace if isinstance(draft.context_trace, dict) else {}
        model = trace.get("model")
        if isinstance(model, dict) and "error_detail" in model:
            trace = {**trace, "model": {key: value for key, value in model.items() if key != "error_detail"}}
        return trace

    class Meta:
        model = Draft
        fields = [
            "id",
            "conversation_id",
            "status",
            "status_label",
            "reply",
            "final_text",
            "confidence",
            "requires_human",
            "reasons",
            "profile_updates",
            "dropped_updates",
            "error",
            "session_id",
            "client",
            "reply_to_message_id",
            "context_trace",
            "delivery",
            "prompt_available",
            "send_blocked_reason",
            "reviewed_at",
            "created_at",
            "updated_at",
        ]

    def get_prompt_available(self, obj: Draft) -> bool:
        # Lists annotate it (the prompt itself is deferred there); a single draft has its prompt.
        annotated = getattr(obj, "has_prompt", None)
        return bool(annotated) if annotated is not None else bool(obj.prompt)

    def get_send_blocked_reason(self, obj: Draft) -> str | None:
        """Known before trying: only for a draft that could still be sent; one answer per customer
        and text per serialization (a list of drafts asks the upstream once per customer)."""
        if obj.status not in (DraftStatus.PENDING, DraftStatus.APPROVED):
            return None
        answers = self.context.setdefault("_send_refusals", {}) if isinstance(self.context, dict) else {}
        key = (obj.customer.conversation_id, obj.final_text or obj.reply)
        if key not in answers:
            answers[key] = get_gateway().send_refusal(*key)
        return answers[key]

    @extend_schema_field(DeliveryOutputSerializer(allow_null=True))
    def get_delivery(self, obj: Draft) -> dict[str, Any] | None:
        delivery = getattr(obj, "delivery", None)
        return dict(DeliveryOutputSerializer(delivery).data) if delivery is not None else None


def _inline_enum(choices: type[models.TextChoices]) -> type[serializers.CharField]:
    """A read-only status documented as an inline enum: several models name their state `status`
    with different values, and a shared component name would collide."""

    @extend_schema_field({"type": "string", "enum": list(choices.values)})
    class InlineEnumField(serializers.CharField):
        pass

    return InlineEnumField


TaskStatusField = _inline_enum(TaskStatus)
RecommendationStatusField = _inline_enum(RecommendationStatus)


class TaskOutputSerializer(serializers.ModelSerializer):
    conversation_id = serializers.CharField(source="customer.conversation_id")
    status = TaskStatusField()
    status_label = serializers.CharField(source="get_status_display")

    class Meta:
        model = Task
        fields = [
            "id",
            "conversation_id",
            "title",
            "note",
            "status",
            "status_label",
            "due_at",
            "resolution_reason",
            "resolved_at",
            "resolved_by_name",
            "created_at",
            "updated_at",
        ]


class AlertOutputSerializer(serializers.ModelSerializer):
    conversation_id = serializers.CharField(source="customer.conversation_id")
    level_label = serializers.CharField(source="get_level_display")
    kind_label = serializers.CharField(source="get_kind_display")

    class Meta:
        model = Alert
        fields = [
            "id",
            "conversation_id",
            "kind",
            "kind_label",
            "level",
            "level_label",
            "text",
            "resolved",
            "resolution_reason",
            "resolved_at",
            "resolved_by_name",
            "created_at",
            "updated_at",
        ]


class RecommendationFeedbackOutputSerializer(serializers.ModelSerializer):
    recommendation_id = serializers.IntegerField()
    source_label = serializers.CharField(source="get_source_display")
    verdict_label = serializers.CharField(source="get_verdict_display")

    class Meta:
        model = RecommendationFeedback
        fields = [
            "id",
            "recommendation_id",
            "source",
            "source_label",
            "verdict",
            "verdict_label",
            "comment",
            "actor_name",
            "created_at",
        ]


class RecommendationOutputSerializer(serializers.ModelSerializer):
    conversation_id = serializers.CharField(source="customer.conversation_id")
    status = RecommendationStatusField()
    status_label = serializers.CharField(source="get_status_display")
    latest_feedback = serializers.SerializerMethodField()
    feedback = serializers.SerializerMethodField()

    class Meta:
        model = Recommendation
        fields = [
            "id",
            "conversation_id",
            "text",
            "status",
            "status_label",
            "latest_feedback",
            "feedback",
            "resolution_reason",
            "resolved_at",
            "resolved_by_name",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(RecommendationFeedbackOutputSerializer(allow_null=True))
    def get_latest_feedback(self, obj: Recommendation) -> dict[str, Any] | None:
        latest = recommendation_latest_feedback(obj)
        return dict(RecommendationFeedbackOutputSerializer(latest).data) if latest is not None else None

    @extend_schema_field(RecommendationFeedbackOutputSerializer(many=True))
    def get_feedback(self, obj: Recommendation) -> list[dict[str, Any]]:
        """The whole feedback history, newest first."""
        history = sorted(obj.feedback.all(), key=lambda f: (f.created_at, f.id), reverse=True)
        return [dict(item) for item in RecommendationFeedbackOutputSerializer(history, many=True).data]
