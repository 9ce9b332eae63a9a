"""The memory provider boundary (spec §7). Only the local provider exists: customer data stays in
the account database and nothing is sent out. The turn pipeline calls `get_provider()` only.

The turn hands the provider the objects it already holds (the `Customer`, the `Message` to answer)
instead of ids to be read back; callers that only have ids (the context API) resolve them with
`PrefetchRequest.for_conversation`. The methods keep the spec's shape: prefetch(context),
capture(turn), search(query, scope), conclude(conversationId), getProfile(conversationId),
forget(memoryId), plus memory_version(customer) for a new epoch and
ground_profile_updates(customer, updates): the model's proposed profile values judged by the reader
against the customer's own messages (`memory/capture/grounding.py`). Its HTTP face (the context and
session-search endpoints) is `memory/providers/apis.py`.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field

from conversations.models import Customer, Message
from conversations.selectors import conversation_not_found, customer_get
from memory import sql
from memory.capture.grounding import ProfileGrounding
from memory.context.builder import AgentContextBuilder, BuiltContext
from qiwei_site.platform.audit import context_read_record
from qiwei_site.platform.errors import NotFound, ValidationFailed
from qiwei_site.platform.history import Actor
from qiwei_site.platform.models import ContextReadPurpose


@dataclass(frozen=True)
class PrefetchRequest:
    """Build the context for a customer's turn: for `latest_message`, by default (None) for the
    customer's latest inbound message."""

    customer: Customer
    latest_message: Message | None = None

    def __post_init__(self) -> None:
        if self.latest_message is not None and self.latest_message.customer_id != self.customer.pk:
            raise ValueError("the message to answer belongs to another customer")

    @property
    def conversation_id(self) -> str:
        return self.customer.conversation_id

    @classmethod
    def for_conversation(cls, conversation_id: str, latest_message_id: int | None = None) -> PrefetchRequest:
        """The request for ids: NotFound for an unknown conversation or a message not in it."""
        # Every context request starts here: the customer by one hand-written statement.
        customer = sql.customer_by_conversation(conversation_id)
        if customer is None:
            raise conversation_not_found(conversation_id)
        latest = None
        if latest_message_id is not None:
            latest = Message.objects.filter(customer=customer, pk=latest_message_id).first()
            if latest is None:
                raise NotFound("该会话中没有这条消息 (no such message in this conversation).", code="message_not_found")
        return cls(customer=customer, latest_message=latest)


@dataclass(frozen=True)
class TurnHypothesis:
    """A model inference the turn validated: it rests on the customer's own inbound messages
    (`message_ids`), and stays a `hypothesis` item until a supervisor confirms it."""

    key: str
    text: str
    confidence: float
    message_ids: tuple[int, ...]

    def as_payload(self) -> dict[str, object]:
        return {
            "key": self.key,
            "text": self.text,
            "confidence": self.confidence,
            "message_ids": list(self.message_ids),
        }


@dataclass(frozen=True)
class CaptureTurn:
    """What a finished turn hands to memory: grounded profile updates and their evidence, and the
    validated hypotheses (each with its own evidence)."""

    customer: Customer
    draft_id: int | None
    profile_updates: dict[str, str] = field(default_factory=dict)
    source_message_ids: list[int] = field(default_factory=list)
    hypotheses: list[TurnHypothesis] = field(default_factory=list)
    # Profile values the reader read only as proposals (`ProfileGrounding.proposed`): to review.
    profile_proposals: dict[str, dict[str, object]] = field(default_factory=dict)

    @property
    def conversation_id(self) -> str:
        return self.customer.conversation_id


@dataclass(frozen=True)
class SearchScope:
    """Search one conversation (`conversation_id`) or the whole account (None)."""

    conversation_id: str | None = None
    limit: int = 50


class MemoryProvider(abc.ABC):
    @abc.abstractmethod
    def prefetch(self, context: PrefetchRequest) -> BuiltContext: ...

    @abc.abstractmethod
    def capture(self, turn: CaptureTurn) -> None: ...

    @abc.abstractmethod
    def search(self, query: str, scope: SearchScope) -> list[Message]: ...

    @abc.abstractmethod
    def conclude(self, conversation_id: str) -> None: ...

    @abc.abstractmethod
    def get_profile(self, conversation_id: str) -> dict[str, str]: ...

    @abc.abstractmethod
    def forget(self, memory_id: int, *, actor: Actor, reason: str) -> None: ...

    @abc.abstractmethod
    def memory_version(self, customer: Customer) -> int | None:
        """The current core-memory snapshot version (None before the first snapshot)."""

    @abc.abstractmethod
    def ground_profile_updates(self, *, customer: Customer, updates: dict[str, str]) -> ProfileGrounding:
        """The model's profile updates kept only where the reader reads the same field with an equal
        canonical value from one of the customer's own gate-passed messages as something capture
        writes by itself; proposed for review where it reads them only as a proposal; the rest
        dropped with reasons."""

    @abc.abstractmethod
    def ground_hypotheses(
        self, *, customer: Customer, hypotheses: list[TurnHypothesis]
    ) -> tuple[list[TurnHypothesis], list[tuple[int, str]]]:
        """(the hypotheses kept, (index, reason) of those dropped): see `memory.capture.grounding`."""


class LocalMemoryProvider(MemoryProvider):
    """Memory over the selected account's own database (call inside `use_account`)."""

    def prefetch(self, context: PrefetchRequest) -> BuiltContext:
        return AgentContextBuilder().build(customer=context.customer, latest_message=context.latest_message)

    def capture(self, turn: CaptureTurn) -> None:
        from memory.capture.jobs import capture_job_enqueue

        payload: dict[str, object] = {
            "profile_updates": dict(turn.profile_updates),
            "source_message_ids": list(turn.source_message_ids),
            "draft_id": turn.draft_id,
        }
        if turn.hypotheses:
            payload["hypotheses"] = [hypothesis.as_payload() for hypothesis in turn.hypotheses]
        if turn.profile_proposals:
            payload["profile_proposals"] = {key: dict(value) for key, value in turn.profile_proposals.items()}
        capture_job_enqueue(customer=turn.customer, payload=payload)

    def search(self, query: str, scope: SearchScope) -> list[Message]:
        from memory.context.search import search_messages

        return search_messages(query=query, conversation_id=scope.conversation_id, limit=scope.limit)

    def conclude(self, conversation_id: str) -> None:
        from memory.snapshots import snapshot_refresh

        snapshot_refresh(customer=customer_get(conversation_id), reason="会话结束，刷新核心记忆快照")

    def get_profile(self, conversation_id: str) -> dict[str, str]:
        customer = customer_get(conversation_id)
        profile = getattr(customer, "profile", None)
        return profile.as_dict() if profile is not None else {}

    def forget(self, memory_id: int, *, actor: Actor, reason: str) -> None:
        from memory.governance.services import memory_item_forget
        from memory.models import MemoryItem

        if not (reason or "").strip():
            raise ValidationFailed("遗忘记忆必须填写原因 (a reason is required).", code="reason_required")
        item = MemoryItem.objects.filter(pk=memory_id).first()
        if item is None:
            raise NotFound("记忆条目不存在 (no such memory item).", code="memory_not_found")
        memory_item_forget(item=item, actor=actor, reason=reason)

    def ground_profile_updates(self, *, customer: Customer, updates: dict[str, str]) -> ProfileGrounding:
        from memory.capture.grounding import profile_updates_ground

        return profile_updates_ground(customer=customer, updates=updates)

    def ground_hypotheses(
        self, *, customer: Customer, hypotheses: list[TurnHypothesis]
    ) -> tuple[list[TurnHypothesis], list[tuple[int, str]]]:
        from memory.capture.grounding import hypotheses_ground

        kept, dropped = hypotheses_ground(customer=customer, hypotheses=hypotheses)
        return [hypotheses[index] for index in kept], dropped

    def memory_version(self, customer: Customer) -> int | None:
        from memory.snapshots import snapshot_current

        snapshot = snapshot_current(customer)
        return snapshot.version if snapshot else None


_local = LocalMemoryProvider()


def context_read(context: PrefetchRequest, *, actor: Actor) -> BuiltContext:
    """The context for a reader outside a turn (the context API): built by the provider and
    recorded, by ids, with who read it (`qiwei_site.platform.audit.context_read_record`)."""
    built = get_provider().prefetch(context)
    context_read_record(
        conversation_id=context.conversation_id,
        purpose=ContextReadPurpose.API,
        trace=built.trace,
        actor=actor,
        reply_to_id=context.latest_message.pk if context.latest_message is not None else None,
    )
    return built


def get_provider() -> MemoryProvider:
    return _local
