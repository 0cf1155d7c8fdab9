# The analysis layer exports nothing itself: import its modules (sweep,
# plots, records, manifest, plan, verify, verdicts).
__all__ = []
