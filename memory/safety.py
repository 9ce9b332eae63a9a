"""The safety gate's old address, kept for benchmarks and outside tools: `memory.safety.scan(text)`.

The gate lives in `memory.capture.safety`; new code imports it from there.
"""

from memory.capture.safety import CREDENTIAL, HIDDEN_CHARACTERS, PROMPT_INJECTION, ScanResult, scan
from memory.text import fold_compatibility as normalise

__all__ = ["CREDENTIAL", "HIDDEN_CHARACTERS", "PROMPT_INJECTION", "ScanResult", "normalise", "scan"]
