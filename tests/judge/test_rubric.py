"""The rubric is complete data: 8 dimensions, 3 stages, five level descriptions each, official weights."""

from judge.rubric import DIMENSION_KEYS, DIMENSIONS, STAGES, WEIGHTED_SCALE, WEIGHTS, stage_dimensions


def test_rubric_data_is_complete():
    assert len(DIMENSIONS) == 8 and len(set(DIMENSION_KEYS)) == 8
    assert [len(stage_dimensions(s)) for s in STAGES] == [3, 4, 1]
    for dim in DIMENSIONS:
        assert len(dim.levels) == 5 and all(dim.levels) and dim.question
        assert dim.level(5) == dim.levels[0] and dim.level(1) == dim.levels[-1]
    assert sum(WEIGHTS.values()) == 19 and round(5 * 19 * WEIGHTED_SCALE, 9) == 100
    assert {k for k, w in WEIGHTS.items() if w == 3} == {
        "semantic_relevance",
        "factual_accuracy",
        "objectivity_tone",
    }
