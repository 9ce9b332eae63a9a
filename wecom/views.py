"""`/wecom/<account_id>/callback/`: WeCom's URL check (GET) and its event callbacks (POST), both
signed with the account's callback token and encrypted with its EncodingAESKey. Anything that does
not verify — a bad signature, another corp id inside, a stale timestamp — is 403 with nothing stored
and nothing of it logged. A verified `kf_msg_or_event` is taken once (WeCom retries a callback up to
three times) and its pull queued, so WeCom gets its answer well inside its 5 seconds."""

from __future__ import annotations

import logging
import time

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from qiwei_site.platform.errors import ApplicationError
from wecom.callbacks import CallbackRefused, callback_take, callback_verify_url

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024


def _refused(error: ApplicationError) -> JsonResponse:
    return JsonResponse(
        {"code": error.code, "detail": error.detail},
        status=error.status_code,
        json_dumps_params={"ensure_ascii": False},
    )


def _too_large(request: HttpRequest) -> bool:
    """Judged by the declared length before the body is read (reading an oversized body is the cost
    to avoid, and Django would refuse one past its own limit with an HTML page)."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return True
    return declared > MAX_BODY_BYTES


@csrf_exempt
def wecom_callback(request: HttpRequest, account_id: str) -> HttpResponse:
    query = {name: request.GET.get(name, "") for name in ("msg_signature", "timestamp", "nonce", "echostr")}
    started = time.monotonic()
    try:
        if request.method == "GET":
            plain = callback_verify_url(account_id=account_id, **query)
            return HttpResponse(plain, content_type="text/plain; charset=utf-8")
        if request.method != "POST":
            raise CallbackRefused("只支持 GET 与 POST (method not allowed).", code="method_not_allowed", status=405)
        if _too_large(request):
            raise CallbackRefused("回调内容过大 (callback body too large).", code="callback_too_large", status=413)
        callback_take(
            account_id=account_id,
            body=request.body,
            msg_signature=query["msg_signature"],
            timestamp=query["timestamp"],
            nonce=query["nonce"],
        )
    except ApplicationError as error:
        # The reason's code only: the payload may be anyone's, and is never logged.
        logger.info("wecom callback for %s refused: %s", account_id[:40], error.code)
        return _refused(error)
    except Exception as exc:  # a store or broker fault: JSON, and a status WeCom retries
        logger.error("wecom callback for %s failed: %s", account_id[:40], exc.__class__.__name__)
        return JsonResponse(
            {"code": "callback_failed", "detail": "回调暂时无法处理，请稍后重试 (callback failed; retry)."},
            status=503,
            json_dumps_params={"ensure_ascii": False},
        )
    logger.debug("wecom callback for %s taken in %.1f ms", account_id, (time.monotonic() - started) * 1000)
    return HttpResponse("success", content_type="text/plain; charset=utf-8")
