"""The llm_decode_bench terminal tables (seed 002) are box tables read by meaning (``ctx \\ conc`` matrices
under "Aggregate tok/s" / "Per-Request tok/s" captions, "Selected C=N" metric tables); this module adds the
``Engine: vLLM <version>`` line the tool prints."""
