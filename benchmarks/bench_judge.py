"""Is a model good enough to be the bench's judge?  Its labels on hand-labelled cases.

``chronomem bench locomo --judge SPEC`` grades answers (prompt ``judge_v1``) and
``chronomem bench msc --judge SPEC`` labels each reply against the speaker's persona
(``consistency_v1``).  A judge is only worth its calls if it agrees with a person on
cases that are not in doubt; this script asks the model to label such cases and
prints how many it got right, per prompt, with the labels it gave.

* LoCoMo: real conv-30 questions and gold answers, with a right answer worded
  otherwise and a wrong one (another date, thing or person).
* MSC: the persona of Speaker 2 after session 3 in the first MSC episodes, and
  replies written to use a persona statement, to contradict one, or to touch none.

    .venv/bin/python benchmarks/bench_judge.py --llm local
    .venv/bin/python benchmarks/bench_judge.py --llm openai:gpt-4o-mini@https://api.openai.com/v1

Model calls are not cached (``--cache`` to use a cache file).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from chronomem.bench.datasets import DEFAULT_LOCOMO_PATH, DEFAULT_MSC_PATH, QA, load_locomo, load_msc
from chronomem.bench.runner import judge_answer, judge_consistency

# (a conv-30 question, a prediction, whether a person grades it correct against the gold answer)
LOCOMO_BY_TEXT: list[tuple[str, str, bool]] = [
    ("When Jon has lost his job as a banker?", "On 19 January 2023", True),
    ("When Jon has lost his job as a banker?", "In March 2022", False),
    ("Why did Jon decide to start his dance studio?", "Because dancing is his passion and he lost his job", True),
    ("Why did Jon decide to start his dance studio?", "To sell clothes online", False),
    ("When did Gina launch an ad campaign for her store?", "29 January 2023", True),
    ("When did Gina launch an ad campaign for her store?", "20 June 2023", False),
    ("Which cities has Jon visited?", "Rome and Paris", True),
    ("Which cities has Jon visited?", "London", False),
]

# (MSC episode index, last message, reply of Speaker 2, label a person gives)
MSC_CASES: list[tuple[int, str, str, str]] = [
    (0, "Any luck with the search for a new gym?",
     "Yes! I'm joining the new gym near me, since there are no running clubs around here.", "USES"),
    (0, "Any luck with the search for a new gym?",
     "Not really, I drive my car to the hospital every day, being a nurse leaves no time.", "CONTRADICTS"),
    (0, "Any luck with the search for a new gym?", "Haha, not yet. How was your weekend?", "NEUTRAL"),
    (0, "Any luck with the search for a new gym?",
     "I will, but it rains so much here that I might just get a treadmill.", "USES"),
    (0, "Any luck with the search for a new gym?",
     "I just moved to Florida, it's sunny all year, so I run outside.", "CONTRADICTS"),
    (1, "Do you have animals on the farm?",
     "Yes, a few chickens, but I mostly grow vegetables like corn and squash.", "USES"),
    (1, "Do you have animals on the farm?", "I don't have a farm, I live in a city apartment in New York.",
     "CONTRADICTS"),
    (1, "Do you have animals on the farm?", "That's a good question! What made you ask?", "NEUTRAL"),
    (2, "How is the orange tree going?", "I never planted any tree, I hate gardening.", "CONTRADICTS"),
    (2, "How is the orange tree going?", "My neighbor replanted the orange tree on the other side of his yard.", "USES"),
]


def consistency_label(scores: dict[str, float | None]) -> str:
    if scores["judge_uses"] is None:
        return "?"
    return "USES" if scores["judge_uses"] else "CONTRADICTS" if scores["judge_contradicts"] else "NEUTRAL"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llm", default="local", help="LLM spec of the judge (default: local)")
    ap.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO_PATH)
    ap.add_argument("--msc", type=Path, default=DEFAULT_MSC_PATH)
    ap.add_argument("--cache", default=None, help="model cache file (default: none)")
    args = ap.parse_args(argv)

    from chronomem.providers import make_llm

    llm = make_llm(args.llm, cache=args.cache or False)
    conv = load_locomo(args.locomo, ["conv-30"])[0]
    by_text = {q.question: q for q in conv.qa}
    t0 = time.perf_counter()
    right, marks = 0, []
    for question, prediction, correct in LOCOMO_BY_TEXT:
        qa: QA = by_text[question]
        said = judge_answer(llm, qa, prediction) == 1.0
        right += said == correct
        marks.append("C" if said else "W")
    print(f"judge_v1 (LoCoMo answers): {right}/{len(LOCOMO_BY_TEXT)} right; labels {''.join(marks)} "
          f"(wanted {''.join('C' if c else 'W' for _, _, c in LOCOMO_BY_TEXT)}); {time.perf_counter() - t0:.0f} s")

    episodes = load_msc(args.msc, max(e for e, *_ in MSC_CASES) + 1)
    t0 = time.perf_counter()
    right, marks = 0, []
    for e, message, reply, wanted in MSC_CASES:
        persona = episodes[e].personas_after_session_3["Speaker 2"]
        label = consistency_label(judge_consistency(llm, persona, "Speaker 2", "Speaker 1", message, reply))
        right += label == wanted
        marks.append(label[0])
    print(f"consistency_v1 (MSC replies): {right}/{len(MSC_CASES)} right; labels {''.join(marks)} "
          f"(wanted {''.join(w[0] for *_, w in MSC_CASES)}); {time.perf_counter() - t0:.0f} s")
    print(f"model: {llm.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
