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
