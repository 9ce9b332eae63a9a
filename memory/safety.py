"""The safety gate's old address, kept for benchmarks and outside tools: `memory.safety.scan(text)`.

The gate lives in `qiwei_site.reading.safety`; new code imports it from there.
"""

from qiwei_site.reading.normalise import fold_compatibility as normalise
from qiwei_site.reading.safety import CREDENTIAL, HIDDEN_CHARACTERS, PROMPT_INJECTION, ScanResult, scan

__all__ = ["CREDENTIAL", "HIDDEN_CHARACTERS", "PROMPT_INJECTION", "ScanResult", "normalise", "scan"]
