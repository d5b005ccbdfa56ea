"""The working-number policy on each basis, and a property test: never above headline or steady state."""

from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from app.audit.working import Candidate, StandingFlag, decide

CRIT = StandingFlag("full_acceptance", "critical")
LADDER = [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]


def seed_recipe() -> list[Candidate]:
    cands = [Candidate(i + 1, t) for i, (_, t) in enumerate(LADDER)]
    top = cands[-1]
    top.steady_low, top.steady_high, top.standing = 373.0, 391.0, [CRIT]
    return cands


def test_seed_recipe_quotes_373_on_steady_state():
    w = decide(seed_recipe())
    assert (w.tps, w.basis, w.headline_tps, w.inflation_ratio) == (373.0, "steady_state", 1004.9, 2.69)
    assert "373 to 391" in w.reason
    assert w.steady_state == {"low": 373.0, "high": 391.0, "entry_id": 6}


def test_entry_gets_its_recipes_working_number():
    cands = seed_recipe()
    w = decide(cands, entry=cands[0])      # the draft-8 rung, below the stated steady state
    assert (w.tps, w.basis) == (373.0, "steady_state") and "stated for the recipe" in w.reason
    clean = [Candidate(1, 198.8), Candidate(2, 133.2), Candidate(3, 150.0, standing=[CRIT])]
    for c in clean:      # every entry of a recipe quotes its lowest clean figure, flagged ones too
        assert decide(clean, entry=c).tps == 133.2
    pre = Candidate(4, 1100.0, phase="prefill")
    assert decide(clean + [pre], entry=pre).basis == "none"
    assert decide(clean + [pre], entry=clean[0]).tps == 133.2


def test_measured_wins_and_lowest_measurement_is_used():
    w = decide(seed_recipe(), [360.0, 355.5])
    assert (w.tps, w.basis) == (355.5, "measured")
    w = decide(seed_recipe(), [900.0])
    assert (w.tps, w.basis) == (373.0, "measured") and "capped at the lowest stated steady state" in w.reason


def test_headline_only_without_blocking_flags_and_uses_mean():
    assert decide([Candidate(1, 131.42, spread=0.59)]).basis == "headline"
    w = decide([Candidate(1, 120.0, samples=[100.0, 104.0, 120.0])])
    assert w.basis == "headline" and round(w.tps, 2) == 108.0 and "mean of 3" in w.reason
    medium_only = decide([Candidate(1, 55.0, standing=[StandingFlag("single_run", "medium")])])
    assert (medium_only.tps, medium_only.basis) == (55.0, "headline")


def test_none_when_blocking_flag_standing_says_which():
    w = decide([Candidate(1, 1004.9, standing=[CRIT, StandingFlag("ladder_top_rung", "high")])])
    assert (w.tps, w.basis) == (None, "none")
    assert "full_acceptance (critical)" in w.reason and "ladder_top_rung (high)" in w.reason
    assert decide([Candidate(1, None)]).reason == "the page gives no throughput figure"


def test_recipe_headline_basis_takes_lowest_clean_entry():
    cands = [Candidate(1, 90.0), Candidate(2, 150.0, standing=[CRIT]), Candidate(3, 110.0)]
    w = decide(cands)
    assert (w.tps, w.basis, w.headline_tps) == (90.0, "headline", 150.0) and "entry 1" in w.reason


pos = st.floats(min_value=0.01, max_value=1e6, allow_nan=False, allow_infinity=False)
maybe = st.one_of(st.none(), pos, st.just(0.0), st.just(float("nan")), st.just(-5.0))
severity = st.sampled_from(["critical", "high", "medium", "low"])
candidate = st.builds(
    Candidate, entry_id=st.integers(1, 50), headline_tps=maybe, spread=st.one_of(st.none(), pos),
    samples=st.lists(maybe, max_size=4), steady_low=maybe, steady_high=maybe,
    standing=st.lists(st.builds(StandingFlag, rule=st.just("r"), severity=severity), max_size=2),
)


@hsettings(max_examples=400, deadline=None)
@given(st.lists(candidate, min_size=1, max_size=6), st.lists(maybe, max_size=3), st.data())
def test_quotable_never_above_headline_or_any_steady_state(cands, measured, data):
    entry = data.draw(st.one_of(st.none(), st.sampled_from(cands)))
    w = decide(cands, measured, entry=entry)
    assert w.basis in ("measured", "steady_state", "headline", "none")
    if w.tps is None:
        return
    # an entry's working number is its recipe's: bounded by the recipe's highest headline
    heads = [c.headline_tps for c in cands if c.headline_tps and c.headline_tps == c.headline_tps and c.headline_tps > 0]
    if heads:
        assert w.tps <= max(heads)
    for c in cands:
        for s in (c.steady_low, c.steady_high):
            if s is not None and s == s and s > 0:
                assert w.tps <= s


def test_prefill_and_e2e_figures_are_never_a_decode_working_number():
    from app.audit.working import Candidate, decide

    pp = Candidate(1, 2500.0, spread=12.0, phase="prefill")
    w = decide([pp])
    assert w.tps is None and w.basis == "none" and "prefill" in w.reason
    e2e = Candidate(2, 900.0, spread=3.0, phase="e2e")
    assert decide([e2e], entry=e2e).basis == "none"
    dec = Candidate(3, 80.0, spread=1.0, phase="decode")
    assert decide([dec]).tps == 80.0


def test_superseded_figure_gets_none_and_leaves_the_recipe_pool():
    """A tuning story's earlier figures (the page raised them to a later one) are never quoted."""
    cands = [Candidate(1, 20.0, superseded=True), Candidate(2, 43.0, superseded=True), Candidate(3, 57.0)]
    assert decide(cands).tps == 57.0
    w = decide(cands, entry=cands[0])
    assert (w.tps, w.basis) == (None, "none") and "superseded" in w.reason
    assert decide(cands, entry=cands[2]).tps == 57.0
