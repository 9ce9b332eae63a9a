"""What the gate reports: scan categories and the categories of sensitive spans."""

from __future__ import annotations

PROMPT_INJECTION = "prompt_injection"
CREDENTIAL = "credential"
HIDDEN_CHARACTERS = "hidden_characters"

# Span categories: CREDENTIAL (above) and these.
VERIFICATION_CODE = "verification_code"
CARD_SECURITY_CODE = "cvv"
ID_CARD = "id_card"
BANK_CARD = "bank_card"
MOBILE = "mobile"
# Secrets block capture (scan's category CREDENTIAL); personal numbers are cut out of what it reads.
SECRET_CATEGORIES = frozenset({CREDENTIAL, VERIFICATION_CODE, CARD_SECURITY_CODE})
PERSONAL_NUMBER_CATEGORIES = frozenset({ID_CARD, BANK_CARD, MOBILE})

# What each category is called where people read it (alerts, admin, audit details).
CATEGORY_LABELS = {
    PROMPT_INJECTION: "提示注入",
    CREDENTIAL: "凭证",
    HIDDEN_CHARACTERS: "隐藏字符",
    VERIFICATION_CODE: "验证码",
    CARD_SECURITY_CODE: "卡安全码",
    ID_CARD: "身份证号",
    BANK_CARD: "银行卡号",
    MOBILE: "手机号",
}


def category_label(category: str) -> str:
    """A category's Chinese name; an unknown code is shown as it is."""
    return CATEGORY_LABELS.get(category, category)
