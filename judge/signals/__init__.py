"""The deterministic CPU signals judge (no LLM)."""

from judge.signals.authority import DomainAuthority, is_institutional
from judge.signals.engine import SIGNALS_VERSION, SignalsJudge

__all__ = ["SIGNALS_VERSION", "DomainAuthority", "SignalsJudge", "is_institutional"]
