"""LoCoMo / Mem0 metrics against hand-computed values, including the dataset quirks."""

from __future__ import annotations

import math

import pytest

from chronomem.bench.datasets import parse_evidence
from chronomem.bench.metrics import (bleu1, evidence_recall, fact_coverage, locomo_f1, mem0_f1,
                                     multi_answer_f1, normalize_answer, percentile, persona_recall, token_f1)


def test_normalize_drops_commas_punctuation_articles_and_conjunction() -> None:
    assert normalize_answer("The cat, and a Dog!") == "cat dog"
    assert normalize_answer("7 May, 2023.") == "7 may 2023"
    # 'and' only as a word; 'an' inside a word stays
    assert normalize_answer("Andrew and Anna") == "andrew anna"


def test_token_f1_is_multiset_over_stems() -> None:
    # stems: [run, in, park] vs [ran, at, park] -> 1 common; P = R = 1/3
    assert token_f1("running in the park", "ran at the park") == pytest.approx(1 / 3)
    # multiset: prediction repeats a token once more than the gold holds
    # [paint, paint] vs [paint]: common 1, P = 1/2, R = 1 -> 2/3
    assert token_f1("painting painting", "paint") == pytest.approx(2 / 3)
    assert token_f1("", "anything") == 0.0


def test_integer_answers_are_scored_as_text() -> None:
    assert locomo_f1("2022", 2022, 2) == 1.0
    # [in, 2022] vs [2022]: P = 1/2, R = 1 -> 2/3
    assert locomo_f1("In 2022", 2022, 2) == pytest.approx(2 / 3)
    assert locomo_f1("3", 3, 1) == 1.0


def test_category_1_averages_best_match_over_gold_parts() -> None:
    # gold parts: hiking | painting; one prediction part [paint, swim]
    # hiking -> 0; painting -> P 1/2, R 1 -> 2/3; mean = 1/3
    assert multi_answer_f1("painting and swimming", "hiking, painting") == pytest.approx(1 / 3)
    assert locomo_f1("painting and swimming", "hiking, painting", 1) == pytest.approx(1 / 3)
    # prediction split on commas too: each gold part finds its exact match
    assert locomo_f1("painting, hiking", "hiking, painting", 1) == 1.0


def test_category_3_uses_gold_before_first_semicolon() -> None:
    gold = "Likely yes; she mentions loving the outdoors"
    assert locomo_f1("likely yes", gold, 3) == 1.0
    assert locomo_f1("likely yes", gold, 4) < 1.0


def test_category_5_counts_abstentions() -> None:
    assert locomo_f1("Not mentioned in the conversation.", "", 5) == 1.0
    assert locomo_f1("No information available", "", 5) == 1.0
    assert locomo_f1("She went to Paris", "", 5) == 0.0


def test_unknown_category_is_an_error() -> None:
    with pytest.raises(ValueError):
        locomo_f1("x", "x", 7)


def test_mem0_f1_uses_token_sets() -> None:
    # {the, cat, sat} vs {the, cat}: P 2/3, R 1 -> 0.8
    assert mem0_f1("The cat sat.", "the cat") == pytest.approx(0.8)
    assert mem0_f1("the the the", "the") == 1.0
    assert mem0_f1("", "x") == 0.0
    assert mem0_f1(2022, 2022) == 1.0


def test_bleu1_clipped_precision_with_brevity_penalty() -> None:
    # precision 2/2, brevity penalty exp(1 - 6/2)
    assert bleu1("the cat", "the cat sat on the mat") == pytest.approx(math.exp(-2))
    # clipped: 'the' counted at most twice (reference has it twice); 7 tokens, 3 matches, no penalty
    assert bleu1("the the the the cat x y", "the cat the dog") == pytest.approx(3 / 7)
    assert bleu1("dog", "cat") == 0.0


def test_evidence_recall_at_k_with_malformed_gold() -> None:
    gold = parse_evidence(["D8:6; D9:17"])
    assert gold == ("D8:6", "D9:17")
    assert evidence_recall(gold, ["D9:17", "D1:1", "D8:6"], 1) == 0.5
    assert evidence_recall(gold, ["D9:17", "D1:1", "D8:6"], 3) == 1.0
    assert evidence_recall(gold, ["D1:1"], None) == 0.0
    # questions without gold evidence are left out, not counted as 0 or 1
    assert evidence_recall((), ["D1:1"], 10) is None
    assert evidence_recall(parse_evidence(["D"]), ["D1:1"], 10) is None


def test_parse_evidence_repairs_known_quirks() -> None:
    assert parse_evidence(["D:11:26"]) == ("D11:26",)
    assert parse_evidence(["D30:05"]) == ("D30:5",)
    assert parse_evidence(["D"]) == ()
    assert parse_evidence([]) == ()
    assert parse_evidence(["D1:2", "D1:2", "D3:4"]) == ("D1:2", "D3:4")


def test_persona_recall_counts_content_words() -> None:
    memory = "Speaker 2 works as a programmer. Speaker 2 is joining a gym near home."
    # 'I work as a programmer.' -> content stems {work, programm} both in sentence 1
    assert fact_coverage("I work as a programmer.", ["Speaker 2 works as a programmer."]) == 1.0
    cov, rec = persona_recall(memory, ["I work as a programmer.", "I have three cats."])  # type: ignore[misc]
    # second fact: {three, cat} -> nothing -> 0
    assert cov == pytest.approx(0.5)
    assert rec == pytest.approx(0.5)
    assert persona_recall(memory, []) is None


def test_percentile_interpolates() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10.0], 95) == 10.0
    assert percentile([], 50) is None


def test_sign_test_against_hand_computed_binomial_tails() -> None:
    from chronomem.bench.metrics import sign_test

    assert sign_test(0, 0) is None
    assert sign_test(1, 1) == 1.0  # an even split is no evidence at all
    assert sign_test(5, 0) == pytest.approx(2 / 32)  # 2 × 0.5^5
    assert sign_test(0, 5) == sign_test(5, 0)  # symmetric
    # 8 wins, 2 losses: 2 × (C(10,0) + C(10,1) + C(10,2)) / 2^10 = 2 × 56 / 1024
    assert sign_test(8, 2) == pytest.approx(112 / 1024)
    with pytest.raises(ValueError, match="counts"):
        sign_test(-1, 3)
