"""Governance API (DESIGN §12): read and curate a customer's memory, profile, snapshots, audit; erase.

Views validate input, call one service or selector and serialize the result. Writes need a
staff member of the account (`governance_methods`); reads need only a member.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import CustomerProfile
from conversations.selectors import customer_get, message_get
from conversations.services import customer_get_or_create
from memory import selectors
from memory.governance.erasure import customer_erase
from memory.governance.messages import message_forget
from memory.governance.services import (
    REASON_REQUIRED_DETAIL,
    memory_item_add,
    memory_item_confirm,
    memory_item_edit,
    memory_item_expire,
    memory_item_forget,
    memory_item_reject,
    memory_proposal_accept,
)
from memory.models import MemoryItem, MemorySnapshot, MemoryType
from memory.profile import customer_profile_update
from qiwei_site.platform.api import AccountAPIView, TextField
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.pagination import LimitOffsetPagination, paginated_response
from qiwei_site.reading.extract import hold_back_label
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES, PROFILE_FIELD_SPECS
from qiwei_site.reading.masking import mask_sensitive

GOVERNANCE = ("POST", "PATCH", "DELETE")


class GovernanceReasonInput(serializers.Serializer):
    """Input that refuses unknown fields, so a typo is a 400 rather than a silent no-op. Every
    governance write names its reason; a missing or blank one is a 400 `reason_required`."""

    rejects_unknown_fields = True  # documented as additionalProperties: false

    reason = TextField(max_length=300, help_text="原因（必填），写入历史记录和审计")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(getattr(self, "initial_data", {}) or {}) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({field: "未知字段 (unknown field)." for field in unknown})
        return attrs


_MISSING_REASON_CODES = frozenset({"required", "blank", "null"})


def governance_input(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """Validate a governance body; a missing reason is its own error code, so a client can tell
    "say why" from "fix this field"."""
    serializer = serializer_class(data=data if data else {})
    if serializer.is_valid():
        return dict(serializer.validated_data)
    errors = serializer.errors
    if any(getattr(error, "code", "") in _MISSING_REASON_CODES for error in errors.get("reason", [])):
        raise ValidationFailed(REASON_REQUIRED_DETAIL, code="reason_required", extra={"errors": errors})
    raise serializers.ValidationError(errors)


class MemoryItemOutputSerializer(serializers.ModelSerializer):
    held_back = serializers.CharField(
        read_only=True, help_text="提议（status=proposed）未自动写入的规则名；自动写入或人工条目为空"
    )
    held_back_label = serializers.SerializerMethodField(help_text="该规则的中文说明")
    clause = serializers.SerializerMethodField(help_text="提议读出的客户原话片段（敏感信息已遮蔽）")

    class Meta:
        model = MemoryItem
        fields = [
            "id",
            "type",
            "key",
            "content",
            "source_message_ids",
            "confidence",
            "importance",
            "status",
            "direction",
            "created_by",
            "expires_at",
            "created_at",
            "updated_at",
            "held_back",
            "held_back_label",
            "clause",
        ]

    def get_held_back_label(self, item: MemoryItem) -> str:
        return hold_back_label(item.held_back) if item.held_back else ""

    def get_clause(self, item: MemoryItem) -> str:
        return mask_sensitive(item.clause) if item.clause else ""


class MemoryItemHistoryOutputSerializer(serializers.Serializer):
    history_id = serializers.IntegerField()
    history_date = serializers.DateTimeField()
    history_type = serializers.CharField(help_text="+ 创建, ~ 修改, - 删除")
    history_user_id = serializers.IntegerField(allow_null=True)
    history_change_reason = serializers.CharField(allow_null=True)
    type = serializers.CharField()
    content = serializers.CharField()
    status = serializers.CharField()
    confidence = serializers.FloatField()
    importance = serializers.IntegerField()
    created_by = serializers.CharField()
    direction = serializers.CharField()
    source_message_ids = serializers.JSONField()
    expires_at = serializers.DateTimeField(allow_null=True)
    superseded_by_id = serializers.IntegerField(allow_null=True)


class SnapshotOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = MemorySnapshot
        fields = ["version", "content", "char_count", "item_ids", "left_out_ids", "sha256", "reason", "created_at"]


class SnapshotVersionOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = MemorySnapshot
        fields = ["version", "char_count", "item_ids", "sha256", "reason", "created_at"]


class ProfileOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = CustomerProfile
        fields = [*PROFILE_FIELD_NAMES, "updated_at"]


# --- memory items -------------------------------------------------------------------------------


class MemoryItemListApi(AccountAPIView):
    governance_methods = GOVERNANCE
    pagination_class = LimitOffsetPagination

    class MemoryItemAddInput(GovernanceReasonInput):
        content = TextField(max_length=2000)
        type = serializers.ChoiceField(choices=MemoryType.choices, default=MemoryType.FACT)
        key = serializers.CharField(required=False, max_length=200)
        importance = serializers.IntegerField(min_value=1, max_value=5, default=5)
        source_message_ids = serializers.ListField(
            child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False, default=list
        )
        expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)

    @extend_schema(
        parameters=[
            OpenApiParameter("type", OpenApiTypes.STR, enum=MemoryType.values),
            OpenApiParameter("status", OpenApiTypes.STR, enum=["active", "proposed", "rejected", "superseded"]),
            OpenApiParameter("created_by", OpenApiTypes.STR, enum=["auto", "human"]),
        ],
        responses=MemoryItemOutputSerializer(many=True),
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        items = selectors.memory_item_list(customer=customer, filters=request.query_params)
        return paginated_response(request=request, view=self, queryset=items, serializer=MemoryItemOutputSerializer)

    @extend_schema(request=MemoryItemAddInput, responses={201: MemoryItemOutputSerializer})
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        data = governance_input(self.MemoryItemAddInput, request.data)
        # Like ingest, a supervisor may record what they know before the first message arrives.
        customer, _created = customer_get_or_create(
            conversation_id=conversation_id, actor=request.user, reason="人工添加记忆时创建"
        )
        item = memory_item_add(
            customer=customer,
            content=data["content"],
            type=data["type"],
            key=data.get("key"),
            importance=data["importance"],
            source_message_ids=data["source_message_ids"],
            expires_at=data["expires_at"],
            actor=request.user,
            reason=data["reason"],
        )
        return Response(MemoryItemOutputSerializer(item).data, status=201)


class MemoryItemDetailApi(AccountAPIView):
    governance_methods = GOVERNANCE

    class MemoryItemEditInput(GovernanceReasonInput):
        content = TextField(required=False, max_length=2000)
        type = serializers.ChoiceField(choices=MemoryType.choices, required=False)
        importance = serializers.IntegerField(min_value=1, max_value=5, required=False)
        confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
        expires_at = serializers.DateTimeField(required=False, allow_null=True)

    @extend_schema(responses=MemoryItemOutputSerializer)
    def get(self, request: Request, account_id: str, conversation_id: str, item_id: str) -> Response:
        item = selectors.memory_item_get(customer=customer_get(conversation_id), item_id=item_id)
        return Response(MemoryItemOutputSerializer(item).data)

    @extend_schema(request=MemoryItemEditInput, responses=MemoryItemOutputSerializer)
    def patch(self, request: Request, account_id: str, conversation_id: str, item_id: str) -> Response:
        item = selectors.memory_item_get(customer=customer_get(conversation_id), item_id=item_id)
        data = governance_input(self.MemoryItemEditInput, request.data)
        extra: dict[str, Any] = {"expires_at": data["expires_at"]} if "expires_at" in data else {}
        item = memory_item_edit(
            item=item,
            content=data.get("content"),
            type=data.get("type"),
            importance=data.get("importance"),
            confidence=data.get("confidence"),
            actor=request.user,
            reason=data["reason"],
            **extra,
        )
        return Response(MemoryItemOutputSerializer(item).data)

    @extend_schema(
        request=GovernanceReasonInput,
        # drf-spectacular drops DELETE bodies: `qiwei_site.platform.schema` puts this one back.
        extensions={"x-request-body": "GovernanceReasonInputRequest"},
        # Forgetting answers 200 with what was redacted (drf-spectacular would assume 204 for DELETE).
        responses={
            200: inline_serializer(
                "MemoryItemForgetOutput",
                {
                    "item_id": serializers.IntegerField(),
                    "snapshot_version": serializers.IntegerField(),
                    "snapshots_redacted": serializers.IntegerField(),
                },
            )
        },
    )
    def delete(self, request: Request, account_id: str, conversation_id: str, item_id: str) -> Response:
        item = selectors.memory_item_get(customer=customer_get(conversation_id), item_id=item_id)
        data = governance_input(GovernanceReasonInput, request.data)
        result = memory_item_forget(item=item, actor=request.user, reason=data["reason"])
        return Response(result)


class _MemoryItemActionApi(AccountAPIView):
    """POST .../memory/{id}/<action>/ with the reason (required); answers with the item as it now is."""

    governance_methods = GOVERNANCE
    service: Any = None

    @extend_schema(request=GovernanceReasonInput, responses=MemoryItemOutputSerializer)
    def post(self, request: Request, account_id: str, conversation_id: str, item_id: str) -> Response:
        item = selectors.memory_item_get(customer=customer_get(conversation_id), item_id=item_id)
        data = governance_input(GovernanceReasonInput, request.data)
        service = type(self).service
        item = service(item=item, actor=request.user, reason=data["reason"])
        return Response(MemoryItemOutputSerializer(item).data)


class MemoryItemConfirmOutputSerializer(MemoryItemOutputSerializer):
    hypothesis_content = serializers.CharField(read_only=True, help_text="确认前推断的原措辞")

    class Meta(MemoryItemOutputSerializer.Meta):
        fields = [*MemoryItemOutputSerializer.Meta.fields, "hypothesis_content"]


class MemoryItemConfirmApi(AccountAPIView):
    """POST .../memory/{id}/confirm/: a supervisor confirms a hypothesis as a fact, in the wording
    given as `content` or, without one, the guess's words without its hedges (issue 39); answers with
    the fact and the guess's wording (`hypothesis_content`), as the audit keeps both."""

    governance_methods = GOVERNANCE

    class MemoryItemConfirmInput(GovernanceReasonInput):
        content = TextField(
            required=False, max_length=2000, help_text="事实的措辞；缺省为推断去掉「可能」「也许」等推测用语后的内容"
        )

    @extend_schema(request=MemoryItemConfirmInput, responses=MemoryItemConfirmOutputSerializer)
    def post(self, request: Request, account_id: str, conversation_id: str, item_id: str) -> Response:
        item = selectors.memory_item_get(customer=customer_get(conversation_id), item_id=item_id)
        data = governance_input(self.MemoryItemConfirmInput, request.data)
        guess = item.content
        item = memory_item_confirm(item=item, content=data.get("content"), actor=request.user, reason=data["reason"])
        item.hypothesis_content = guess  # type: ignore[attr-defined]
        return Response(MemoryItemConfirmOutputSerializer(item).data)


class MemoryItemRejectApi(_MemoryItemActionApi):
    service = staticmethod(memory_item_reject)


class MemoryItemExpireApi(_MemoryItemActionApi):
    service = staticmethod(memory_item_expire)


class MemoryProposalAcceptApi(AccountAPIView):
    """POST .../memory/{id}/accept/: a supervisor accepts a proposal (issue 35), as read or with the
    value corrected (`content`) and its type chosen; answers with the item, now active memory."""

    governance_methods = GOVERNANCE

    class MemoryProposalAcceptInput(GovernanceReasonInput):
        content = TextField(required=False, max_length=2000, help_text="修改后的内容；缺省按读出的内容采纳")
        type = serializers.ChoiceField(
            choices=[(value, label) for value, label in MemoryType.choices if value != MemoryType.HYPOTHESIS],
            required=False,
            help_text="采纳为事实、偏好、约束或事件；缺省沿用提议的类型",
        )

    @extend_schema(request=MemoryProposalAcceptInput, responses=MemoryItemOutputSerializer)
    def post(self, request: Request, account_id: str, conversation_id: str, item_id: str) -> Response:
        item = selectors.memory_item_get(customer=customer_get(conversation_id), item_id=item_id)
        data = governance_input(self.MemoryProposalAcceptInput, request.data)
        item = memory_proposal_accept(
            item=item, content=data.get("content"), type=data.get("type"), actor=request.user, reason=data["reason"]
        )
        return Response(MemoryItemOutputSerializer(item).data)


class MemoryItemHistoryApi(AccountAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(responses=MemoryItemHistoryOutputSerializer(many=True))
    def get(self, request: Request, account_id: str, conversation_id: str, item_id: str) -> Response:
        item = selectors.memory_item_get(customer=customer_get(conversation_id), item_id=item_id)
        history = selectors.memory_item_history(item=item)
        return paginated_response(
            request=request, view=self, queryset=history, serializer=MemoryItemHistoryOutputSerializer
        )


# --- snapshots, profile, audit, erasure ---------------------------------------------------------------


class SnapshotApi(AccountAPIView):
    @extend_schema(
        parameters=[OpenApiParameter("version", OpenApiTypes.INT, description="指定版本；缺省为当前版本")],
        responses=SnapshotOutputSerializer,
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        raw = request.query_params.get("version")
        version = None
        if raw not in (None, ""):
            field = serializers.IntegerField(min_value=1)
            version = field.run_validation(raw)
        return Response(SnapshotOutputSerializer(selectors.snapshot_get(customer=customer, version=version)).data)


class SnapshotListApi(AccountAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(responses=SnapshotVersionOutputSerializer(many=True))
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        snapshots = selectors.snapshot_list(customer=customer_get(conversation_id))
        return paginated_response(
            request=request, view=self, queryset=snapshots, serializer=SnapshotVersionOutputSerializer
        )


class ProfileApi(AccountAPIView):
    governance_methods = GOVERNANCE

    class ProfileUpdateInput(GovernanceReasonInput):
        # One optional field per declared profile field (an empty value clears it).
        def get_fields(self) -> dict[str, serializers.Field]:
            fields = super().get_fields()
            for spec in PROFILE_FIELD_SPECS:
                fields[spec.name] = serializers.CharField(
                    required=False, allow_blank=True, allow_null=True, max_length=spec.max_length
                )
            return fields

    @extend_schema(responses=ProfileOutputSerializer)
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        profile = CustomerProfile.objects.filter(customer=customer).first() or CustomerProfile(customer=customer)
        return Response(ProfileOutputSerializer(profile).data)

    @extend_schema(request=ProfileUpdateInput, responses=ProfileOutputSerializer)
    def patch(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        data = governance_input(self.ProfileUpdateInput, request.data)
        changes = {field: value or "" for field, value in data.items() if field != "reason"}
        profile = customer_profile_update(customer=customer, changes=changes, actor=request.user, reason=data["reason"])
        return Response(ProfileOutputSerializer(profile).data)


class CustomerEraseApi(AccountAPIView):
    governance_methods = GOVERNANCE

    @extend_schema(
        request=GovernanceReasonInput,
        responses=inline_serializer(
            "CustomerEraseOutput",
            {
                "conversation_id": serializers.CharField(),
                "counts": serializers.DictField(child=serializers.IntegerField()),
            },
        ),
    )
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        data = governance_input(GovernanceReasonInput, request.data)
        counts = customer_erase(customer=customer, actor=request.user, reason=data["reason"])
        return Response({"conversation_id": conversation_id, "counts": counts})


class MessageForgetApi(AccountAPIView):
    """POST .../messages/{id}/forget/ with the reason: the message goes, and every automatic item it
    alone supported is forgotten with it (`memory.governance.messages.message_forget`)."""

    governance_methods = GOVERNANCE

    @extend_schema(
        request=GovernanceReasonInput,
        responses=inline_serializer(
            "MessageForgetOutput",
            {
                "message_id": serializers.IntegerField(),
                "items_forgotten": serializers.ListField(child=serializers.IntegerField()),
                "items_evidence_removed": serializers.ListField(child=serializers.IntegerField()),
                "drafts_scrubbed": serializers.ListField(child=serializers.IntegerField()),
            },
        ),
    )
    def post(self, request: Request, account_id: str, conversation_id: str, message_id: str) -> Response:
        message = message_get(customer=customer_get(conversation_id), message_id=message_id)
        data = governance_input(GovernanceReasonInput, request.data)
        return Response(message_forget(message=message, actor=request.user, reason=data["reason"]))
