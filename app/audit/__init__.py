"""The audit: the rules (``rules/``), the working-number policy (``working``), the quotable answer built
from an audit (``answer``), the engine that runs the rules and stores flags and answers (``engine``),
reads of cached answers (``quotable``), reviewer decisions (``decisions``), the review queue (``queue``),
measurements (``measurements``) and access changes as the audit sees them (``access``).
May use: claims, replay, storage and the core.
"""
