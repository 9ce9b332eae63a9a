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
from django.views.decorators.http import require_http_methods

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


@csrf_exempt
@require_http_methods(["GET", "POST"])
def wecom_callback(request: HttpRequest, account_id: str) -> HttpResponse:
    query = {name: request.GET.get(name, "") for name in ("msg_signature", "timestamp", "nonce", "echostr")}
    started = time.monotonic()
    try:
        if request.method == "GET":
            plain = callback_verify_url(account_id=account_id, **query)
            return HttpResponse(plain, content_type="text/plain; charset=utf-8")
        if len(request.body) > MAX_BODY_BYTES:
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
    logger.debug("wecom callback for %s taken in %.1f ms", account_id, (time.monotonic() - started) * 1000)
    return HttpResponse("success", content_type="text/plain; charset=utf-8")
