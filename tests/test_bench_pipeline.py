"""CI-sized smoke run of the benchmark pipeline with a deterministic test double for the LLM.

Checks the plumbing (rows, report, plots, resume, truncation, refusal of
methods that do not exist yet), not the scores.
"""

from __future__ import annotations

import json
import re
import math
from pathlib import Path

import pytest

from chronomem.bench.datasets import load_locomo, load_msc
from chronomem.bench.methods import (FullContext, MethodConfig, MethodUnavailableError, SharedIngest,
                                     available_methods, build_rsum, make_method)
from chronomem.bench.report import PLOT_BY_CATEGORY, PLOT_VS_TOKENS, write_report
from chronomem.bench.runner import allocate, read_jsonl, run_locomo, run_msc, select_questions
from chronomem.errors import ValidationError
from chronomem.providers.base import CallUsage, ChatResult

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT / "../shared/data/locomo/locomo_dev.json"
MSC = ROOT / "../shared/data/msc/msc_episodes_dev.json"
pytestmark = pytest.mark.skipif(not (LOCOMO.exists() and MSC.exists()), reason="shared data not present")


class FirstTurnLLM:
    """Implements the LLM protocol: answers with the text of the first turn in its memory."""

    name = "test-first-turn"

    def __init__(self, context_window: int = 100_000) -> None:
        self.context_window = context_window
        self.calls: list[list[dict[str, str]]] = []
        self.purposes: list[str] = []

    def chat(self, messages, *, schema=None, max_tokens=512, temperature=0.0, stop=None, purpose="", penalties=None):  # type: ignore[no-untyped-def]
        self.calls.append(messages)
        self.purposes.append(purpose)
        user = messages[-1]["content"]
        answer = "Not mentioned"
        if purpose == "rsum":  # memory update: the memory is the first turn of the new session, reported
            marker = "Newest session" if "Newest session" in user else "New session"  # append or rewrite
            session = user.split(marker, 1)[1].splitlines()[1:]
            first = next((line for line in session if ": " in line), "")
            answer = first.replace(": ", " said: ", 1) if first else "none"  # a sentence, not a dialogue line
            return ChatResult(text=answer, usage=CallUsage(prompt_tokens=self.count_tokens(user),
                                                          completion_tokens=1, latency_s=0.001, purpose=purpose))
        for line in user.splitlines():
            if line.startswith("(D"):
                answer = line.split(": ", 1)[-1]
                break
        return ChatResult(text=answer, usage=CallUsage(prompt_tokens=self.count_tokens(user),
                                                      completion_tokens=self.count_tokens(answer),
                                                      latency_s=0.001, purpose=purpose))

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class HashEmbedder:
    name = "test-hash"
    dim = 32

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            v = [0.0] * self.dim
            for w in t.lower().split():
                v[sum(map(ord, w)) % self.dim] += 1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / n for x in v])
        return out


@pytest.fixture(scope="module")
def conv30():  # type: ignore[no-untyped-def]
    return load_locomo(LOCOMO, ["conv-30"])


def test_allocate_is_proportional_with_one_per_stratum() -> None:
    assert allocate({1: 11, 2: 26, 4: 44}, 8) == {1: 1, 2: 3, 4: 4}
    assert sum(allocate({1: 11, 2: 26, 3: 3, 4: 44}, 40).values()) == 40
    assert allocate({1: 2, 2: 3}, 10) == {1: 2, 2: 3}
    # fewer questions than strata: pure largest remainder
    assert allocate({1: 1, 2: 1, 3: 98}, 2) == {1: 0, 2: 0, 3: 2}
    assert allocate({1: 11, 2: 26, 3: 3, 4: 44}, 40) == {1: 5, 2: 12, 3: 2, 4: 21}


def test_stratified_sample_is_seeded_and_covers_categories(conv30) -> None:  # type: ignore[no-untyped-def]
    a = select_questions(conv30[0], (1, 2, 4), sample=8, seed=1)
    b = select_questions(conv30[0], (1, 2, 4), sample=8, seed=1)
    c = select_questions(conv30[0], (1, 2, 4), sample=8, seed=2)
    assert [q.qid for q in a] == [q.qid for q in b]
    assert [q.qid for q in a] != [q.qid for q in c]
    assert len(a) == 8 and {q.category for q in a} == {1, 2, 4}
    assert len(select_questions(conv30[0], (1, 2, 4))) == 81


def test_locomo_run_report_and_resume(tmp_path: Path, conv30) -> None:  # type: ignore[no-untyped-def]
    llm = FirstTurnLLM()
    methods = ["full_context", "sliding_window", "bm25", "dense"]
    cfg = MethodConfig(top_k=5, window_tokens=300)
    summary = run_locomo(conv30, methods, llm, tmp_path, embedder=HashEmbedder(), config=cfg,
                         categories=(1, 2, 4, 5), sample=5, seed=0, command="pytest")
    assert summary.planned == 20 and summary.answered == 20 and summary.failed == 0
    rows = read_jsonl(tmp_path / "results.jsonl")
    assert len(rows) == 20
    assert {r["method"] for r in rows} == set(methods)
    assert len({r["qid"] for r in rows}) == 5
    bm25 = [r for r in rows if r["method"] == "bm25"]
    assert all(len(r["retrieved_ids"]) <= 5 for r in bm25)
    assert all(r["context_tokens"] > 0 and r["usage"]["calls"] == 1 for r in rows)
    assert all(0.0 <= r["scores"]["locomo_f1"] <= 1.0 for r in rows)
    # the full context holds every turn: all gold evidence is in it
    full = [r for r in rows if r["method"] == "full_context" and r["evidence"]]
    assert all(r["scores"]["recall_context"] == 1.0 and not r["truncated"] for r in full)
    # recall@k only for ranked selections
    assert all(r["scores"]["recall_at_k"] is None for r in full)
    assert all(r["scores"]["recall_at_k"] is not None for r in bm25 if r["evidence"])
    # the answer comes from the memory (first turn shown), so the prompt really carried it
    assert all(r["prediction"] for r in rows)
    # every method saw the same prompt template: system message identical
    assert len({tuple(m[0]["content"] for m in [c]) for c in llm.calls}) == 1

    run = read_jsonl(tmp_path / "runs.jsonl")[-1]  # where and how it ran, for reproducing a row
    assert run["context_window"] == 100_000 and run["machine"]["cpus"] >= 1 and run["machine"]["python"]
    assert "threads" not in run  # this test double has no thread count

    report = write_report(tmp_path)
    text = report.read_text()
    assert "overall 1–4" in text and "5 adversarial" in text
    assert f"Machine: {run['machine']['cpus']} CPUs" in text and "context window 100000" in text
    for m in methods:
        assert f"| {m} |" in text
    assert (tmp_path / PLOT_BY_CATEGORY).stat().st_size > 1000
    assert (tmp_path / PLOT_VS_TOKENS).stat().st_size > 1000
    assert set(json.loads((tmp_path / "summary.json").read_text())) == set(methods)

    # resume: nothing left to do, no model call, no new row
    n_calls = len(llm.calls)
    again = run_locomo(conv30, methods, llm, tmp_path, embedder=HashEmbedder(), config=cfg,
                       categories=(1, 2, 4, 5), sample=5, seed=0)
    assert again.answered == 0 and again.skipped_done == 20
    assert len(llm.calls) == n_calls
    assert len(read_jsonl(tmp_path / "results.jsonl")) == 20

    # a torn last line (killed mid-write) is ignored and that question is redone
    with open(tmp_path / "results.jsonl", "a") as fh:
        fh.write('{"dataset": "locomo", "method": "bm25", "qi')
    more = run_locomo(conv30, ["bm25"], llm, tmp_path, config=cfg, categories=(1, 2, 4, 5), sample=6, seed=0)
    assert more.skipped_done == 5 and more.answered == 1


def test_full_context_truncates_to_the_window_and_says_so(conv30) -> None:  # type: ignore[no-untyped-def]
    llm = FirstTurnLLM(context_window=1500)
    method = make_method("full_context", llm)
    assert isinstance(method, FullContext)
    method.ingest(conv30[0], SharedIngest(conv30[0]))
    q = conv30[0].qa[0]
    ans = method.answer(q)
    assert ans.truncated and ans.info["dropped_turns"] > 0
    assert ans.context_tokens <= 1500
    # the newest turn is kept, the oldest dropped
    last = conv30[0].turns[-1].dia_id
    assert f"({last})" in ans.context and "(D1:1)" not in ans.context
    assert ans.info["kept_from"] == ans.retrieved_ids[-1]


def test_memory_methods_are_refused_until_they_exist() -> None:
    llm = FirstTurnLLM()
    assert {"full_context", "sliding_window", "bm25", "dense"} <= set(available_methods())
    for name in ("rsum", "real", "real+rsum", "flat_facts", "real-no-intents"):
        if name in available_methods():
            continue
        with pytest.raises(MethodUnavailableError, match=re.escape(name)):
            make_method(name, llm)
    with pytest.raises(MethodUnavailableError, match="unknown method"):
        make_method("nope", llm)
    with pytest.raises(MethodUnavailableError, match="embedder"):
        make_method("dense", llm)


def test_rsum_methods_share_one_memory_build(tmp_path: Path, conv30) -> None:  # type: ignore[no-untyped-def]
    llm = FirstTurnLLM()
    s = run_locomo(conv30, ["rsum", "bm25+rsum"], llm, tmp_path, config=MethodConfig(top_k=3),
                   categories=(2,), sample=2, seed=0)
    assert s.answered == 4
    # one memory update per session, done once for both methods
    assert llm.purposes.count("rsum") == len(conv30[0].sessions)
    rows = read_jsonl(tmp_path / "results.jsonl")
    # the memory after the last session is the first turn of the last session (see the test double),
    # and every answer prompt of both methods carried it
    memory = build_rsum(FirstTurnLLM(), conv30[0], 20).memory
    assert "rehearsing" in memory  # D19:1, "Been rehearsing hard and working on business plans."
    answers = [c for c, p in zip(llm.calls, llm.purposes) if p == "answer"]
    assert len(answers) == 4 and all(memory in c[-1]["content"] for c in answers)
    both = [r for r in rows if r["method"] == "bm25+rsum"]
    assert all(r["retrieved_ids"] for r in both)
    ingest = read_jsonl(tmp_path / "ingest.jsonl")
    assert [i["usage"]["calls"] for i in ingest] == [len(conv30[0].sessions), 0]


def test_msc_run_and_report(tmp_path: Path) -> None:
    eps = load_msc(MSC, limit=2)
    llm = FirstTurnLLM()
    methods = ["bm25", "sliding_window", "rsum", "full_context"]
    s = run_msc(eps, methods, llm, tmp_path, config=MethodConfig(top_k=3), max_replies=2)
    rows = read_jsonl(tmp_path / "results.jsonl")
    replies = [r for r in rows if r["kind"] == "reply"]
    assert s.answered == len(rows) and len(replies) == 2 * 2 * 4
    assert all(0.0 <= r["scores"]["reply_f1"] <= 1.0 and r["gold"] for r in replies)
    memory = {(r["method"], r["sample_id"]): r for r in rows if r["kind"] == "memory"}
    # baselines keep no standing memory: persona recall is not invented for them
    assert all(memory[("bm25", e.episode_id)]["scores"]["persona_recall"] is None for e in eps)
    assert all(memory[("bm25", e.episode_id)]["scores"]["persona_recall_after_s3"] is None for e in eps)
    for e in eps:  # the Rsum memory against both gold lists: the next session's facts, the first three's personas
        row = memory[("rsum", e.episode_id)]
        assert 0.0 <= row["scores"]["persona_recall"] <= 1.0 and 0.0 <= row["scores"]["persona_recall_after_s3"] <= 1.0
        assert row["persona_after_session_3"] == e.personas_after_session_3["Speaker 2"]
        assert row["speaker"] == "Speaker 2"
    report = write_report(tmp_path).read_text()
    assert "### MSC — Speaker 2's next-session replies" in report
    assert "persona recall (coverage): next-session facts" in report and "after session 3" in report
    assert run_msc(eps, methods, llm, tmp_path, config=MethodConfig(top_k=3), max_replies=2).answered == 0


def test_msc_memory_rows_from_before_a_score_existed_get_it_on_the_next_run(tmp_path: Path) -> None:
    from chronomem.bench.runner import memory_scores

    eps = load_msc(MSC, limit=2)
    llm = FirstTurnLLM()
    run_msc(eps, ["rsum", "bm25"], llm, tmp_path, max_replies=1)
    results = tmp_path / "results.jsonl"
    rows = read_jsonl(results)
    for r in rows:  # the rows as an older version wrote them: no after-session-3 scores, no speaker
        r.pop("speaker")
        r.pop("persona_after_session_3", None)
        if r["kind"] == "memory":
            r["scores"] = {k: v for k, v in r["scores"].items() if not k.endswith("_after_s3")}
            r["scores"]["persona_recall"] = 0.125  # a score already stored is kept as it is
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    calls = len(llm.calls)
    assert run_msc(eps, ["rsum", "bm25"], llm, tmp_path, max_replies=1).answered == 0
    assert len(llm.calls) == calls  # nothing re-generated
    after = read_jsonl(results)
    assert len(after) == len(rows) and not list(tmp_path.glob("*.tmp"))
    by_id = {e.episode_id: e for e in eps}
    for r in (r for r in after if r["kind"] == "memory"):
        want = memory_scores(r["memory"], by_id[r["sample_id"]], "Speaker 2")
        assert r["scores"]["persona_recall_after_s3"] == want["persona_recall_after_s3"]
        assert r["scores"]["persona_recall"] == 0.125
    assert any(r["scores"]["persona_recall_after_s3"] is not None for r in after if r["method"] == "rsum")


def test_msc_runs_for_another_speaker_are_not_taken_for_done(tmp_path: Path) -> None:
    eps = load_msc(MSC, limit=1)
    llm = FirstTurnLLM()
    first = run_msc(eps, ["sliding_window"], llm, tmp_path, max_replies=1)
    other = run_msc(eps, ["sliding_window"], llm, tmp_path, max_replies=1, speaker="Speaker 1")
    assert first.answered == other.answered == 2  # the memory row and one reply each
    rows = read_jsonl(tmp_path / "results.jsonl")
    assert sorted(r["speaker"] for r in rows) == ["Speaker 1", "Speaker 1", "Speaker 2", "Speaker 2"]
    report = write_report(tmp_path).read_text()
    assert "### MSC — Speaker 2's" in report and "### MSC — Speaker 1's" in report
    assert "| sliding_window | 1 | 1 |" in report
    before = (tmp_path / "results.jsonl").read_text()
    with pytest.raises(ValidationError, match="invalid speaker='speaker 2': the episodes' speakers are 'Speaker 1', "
                                              "'Speaker 2'"):
        run_msc(eps, ["sliding_window"], llm, tmp_path, max_replies=1, speaker="speaker 2")
    assert (tmp_path / "results.jsonl").read_text() == before  # nothing written, nothing lost


def test_msc_report_compares_methods_on_the_episodes_all_of_them_reached(tmp_path: Path) -> None:
    from chronomem.bench.report import group_rows, msc_table

    eps = load_msc(MSC, limit=3)
    llm = FirstTurnLLM()
    run_msc(eps, ["bm25"], llm, tmp_path, config=MethodConfig(top_k=3), max_replies=2)  # a run that got further
    run_msc(eps[:1], ["bm25", "sliding_window"], llm, tmp_path, config=MethodConfig(top_k=3), max_replies=2)
    groups = group_rows(read_jsonl(tmp_path / "results.jsonl"), "msc")
    table = msc_table(groups)
    assert "| bm25 | 3 | 6 |" in table and "| sliding_window | 1 | 2 |" in table
    assert "On the 1 episode every method replied in:" in table
    bm25 = next(g for g in groups if g.method == "bm25")
    first = [r for r in bm25.rows if r.get("kind") == "reply" and r["sample_id"] == eps[0].episode_id]
    f1 = sum(r["scores"]["reply_f1"] for r in first) / len(first)
    assert f"| bm25 | 2 | {100 * f1:.1f} |" in table
    # every method on the same episodes: no second table
    only = msc_table([g for g in groups if g.method == "bm25"])
    assert "every method replied" not in only


def test_cli_lists_methods_refuses_unavailable_ones_and_rewrites_reports(tmp_path: Path, conv30) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from chronomem.bench.methods import unavailable_reason
    from chronomem.cli.bench import app

    runner = CliRunner()
    listed = runner.invoke(app, ["methods"])
    assert listed.exit_code == 0 and "bm25" in listed.output and "real" in listed.output
    if unavailable_reason("real") is not None:
        refused = runner.invoke(app, ["locomo", "--methods", "bm25,real", "--data", str(LOCOMO)])
        assert refused.exit_code != 0 and "real is not available" in str(refused.exception)
    run_locomo(conv30, ["bm25"], FirstTurnLLM(), tmp_path, categories=(4,), sample=2)
    rewritten = runner.invoke(app, ["report", "--out", str(tmp_path), "--no-plots"])
    assert rewritten.exit_code == 0 and "| bm25 |" in rewritten.output


def test_report_labels_a_method_run_under_two_configurations_by_what_differs() -> None:
    from chronomem.bench.report import group_rows

    def row(key: str, config: dict) -> dict:
        return {"dataset": "locomo", "method": "real", "config_key": key, "config": config, "qid": "q1",
                "category": 1, "scores": {"locomo_f1": 1.0}}

    base = {"method": "real", "top_k": 10, "ingest": "abc", "search": {}}
    groups = group_rows([row("k1", base), row("k2", {**base, "context_format": 2}),
                         {**row("k3", {"method": "bm25", "top_k": 10}), "method": "bm25"}], "locomo")
    assert [g.label for g in groups] == ["real [context_format=None]", "real [context_format=2]", "bm25"]


def test_report_lists_methods_best_first_and_category_5_only_ones_last() -> None:
    from chronomem.bench.report import best_first, group_rows

    def row(method: str, qid: str, cat: int, f1: float) -> dict:
        return {"dataset": "locomo", "method": method, "config_key": method, "config": {"method": method},
                "qid": qid, "category": cat, "scores": {"locomo_f1": f1}}

    rows = [row("adversarial_only", "q9", 5, 1.0), row("dense", "q1", 1, 0.2), row("bm25", "q1", 1, 0.5),
            row("bm25", "q2", 4, 0.5), row("real", "q1", 1, 0.9), row("real", "q2", 4, 0.1)]
    ordered = [g.method for g in best_first(group_rows(rows, "locomo"))]
    assert ordered == ["bm25", "real", "dense", "adversarial_only"]  # 0.5 = 0.5: ties keep run order


def test_evidence_recall_is_also_reported_at_10_for_ranked_methods_whatever_their_k() -> None:
    from chronomem.bench.report import EVIDENCE_K, group_rows, locomo_tables, summary_dict

    ranked = [f"D1:{i}" for i in range(1, 21)]  # the gold turn D1:15 is 15th: within top-20, not top-10

    def row(method: str, qid: str, evidence: list[str], retrieved: list[str], recall_at_k: float | None) -> dict:
        return {"dataset": "locomo", "method": method, "config_key": method, "config": {"method": method},
                "qid": qid, "category": 1, "evidence": evidence, "retrieved_ids": retrieved,
                "scores": {"locomo_f1": 0.5, "recall_at_k": recall_at_k, "recall_context": 1.0},
                "usage": {"calls": 1, "prompt_tokens": 10}}

    rows = [row("bm25", "q1", ["D1:15"], ranked, 1.0), row("bm25", "q2", ["D1:2", "D1:30"], ranked, 0.5),
            row("answer", "q1", ["D1:15"], ["D1:15", "D1:3"], 1.0), row("answer", "q2", ["D1:2", "D1:30"], ["D1:30"], 0.5),
            row("full_context", "q1", ["D1:15"], ranked, None)]  # not a ranked selection: no recall@k at all
    groups = {g.method: g for g in group_rows(rows, "locomo")}
    assert EVIDENCE_K == 10
    assert groups["bm25"].recall_at(groups["bm25"].rows) == pytest.approx((0.0 + 0.5) / 2)
    assert groups["answer"].recall_at(groups["answer"].rows) == pytest.approx((1.0 + 0.5) / 2)
    assert groups["full_context"].recall_at(groups["full_context"].rows) is None
    summary = summary_dict(list(groups.values()))
    assert summary["bm25"]["evidence_recall_at_10"] == 0.25 and summary["full_context"]["evidence_recall_at_10"] is None
    table = locomo_tables(list(groups.values()), [])
    assert "| recall@k | recall@10 |" in table
    assert "| 0.750 | 0.250 |" in table  # bm25: recall within its own k (20), then within the first 10


def test_head_to_head_counts_wins_ties_losses_per_category_on_shared_questions() -> None:
    from chronomem.bench.report import group_rows, head_to_head, head_to_head_table, reference_group

    def row(method: str, key: str, qid: str, cat: int, f1: float, time: str = "2026-12-01T00:00:00") -> dict:
        return {"dataset": "locomo", "method": method, "config_key": key, "config": {"method": method, "v": key},
                "qid": qid, "category": cat, "scores": {"locomo_f1": f1}, "time": time}

    rows = [
        # an older configuration of the reference method: never the reference while a newer one exists
        row("real+turns", "old", "q1", 1, 0.0, "2026-11-01T00:00:00"),
        row("real+turns", "new", "q1", 1, 1.0), row("real+turns", "new", "q2", 1, 0.5),
        row("real+turns", "new", "q3", 2, 0.2), row("real+turns", "new", "q4", 2, 0.0),
        row("real+turns", "new", "q5", 5, 1.0),  # category 5 is not part of the head-to-head
        row("bm25", "b", "q1", 1, 0.5), row("bm25", "b", "q2", 1, 0.5),
        row("bm25", "b", "q3", 2, 0.6), row("bm25", "b", "q5", 5, 0.0),  # q4 unanswered by bm25: left out
    ]
    groups = group_rows(rows, "locomo")
    ref = reference_group(groups)
    assert ref is not None and ref.config["v"] == "new"
    bm25 = next(g for g in groups if g.method == "bm25")
    cat1, cat2, overall = head_to_head(ref, bm25)
    assert (cat1.category, cat1.questions, cat1.wins, cat1.ties, cat1.losses) == (1, 2, 1, 1, 0)
    assert (cat2.category, cat2.questions, cat2.wins, cat2.ties, cat2.losses) == (2, 1, 0, 0, 1)
    assert (overall.category, overall.questions, overall.wins, overall.ties, overall.losses) == (None, 3, 1, 1, 1)
    assert overall.delta == pytest.approx(((1.0 - 0.5) + 0.0 + (0.2 - 0.6)) / 3)
    assert overall.p == 1.0
    table = head_to_head_table(groups)
    assert "| bm25 | 3 | 1/1/0 | 0/0/1 | **1/1/1** | +3.3 | 1.00 |" in table
    # the older configuration is compared too, on the one question both answered
    assert "| real+turns [v=old] | 1 | 1/0/0 | – | **1/0/0** | +100.0 | 1.00 |" in table
    # no REAL-family method: no section
    assert head_to_head_table([bm25]) == ""
    # a named reference wins; `answer` (Memory.answer's own configuration) is preferred to real+turns
    assert reference_group(groups, "bm25") is bm25
    assert "Head to head: `bm25`" in head_to_head_table(groups, "bm25")
    with_answer = group_rows(rows + [row("answer", "a", "q1", 1, 1.0)], "locomo")
    picked = reference_group(with_answer)
    assert picked is not None and picked.method == "answer"
    from chronomem.errors import ValidationError

    with pytest.raises(ValidationError, match="reference.*methods here: bm25, real"):
        reference_group(groups, "nosuch")


def _cfg_row(method: str, key: str, config: dict, time: str, qid: str = "q1", f1: float = 1.0) -> dict:
    return {"dataset": "locomo", "method": method, "config_key": key, "config": {"method": method, **config},
            "qid": qid, "category": 1, "scores": {"locomo_f1": f1}, "time": time}


def test_superseded_configurations_are_set_apart_and_the_current_ones_relabelled() -> None:
    from chronomem.bench.report import group_rows, split_superseded

    rows = [
        _cfg_row("real", "new", {"top_k": 10, "ingest": "b", "full_text": 2}, "2026-12-01T00:00:00"),
        _cfg_row("real", "old", {"top_k": 10, "ingest": "a"}, "2026-11-30T00:00:00", f1=0.0),
        _cfg_row("bm25", "k10", {"top_k": 10}, "2026-11-30T00:00:00"),
        _cfg_row("bm25", "k20", {"top_k": 20}, "2026-12-01T00:00:00"),  # a parameter, not a revision: both stay
        _cfg_row("real+turns", "t", {"top_k": 10, "search": {"search_turns": 5}}, "2026-11-30T00:00:00"),
        _cfg_row("real+turns", "t8", {"top_k": 10, "search": {"search_turns": 8}}, "2026-11-29T00:00:00"),
    ]
    groups = group_rows(rows, "locomo")
    assert [g.label for g in groups][:2] == ["real [full_text=2,ingest=b]", "real [full_text=None,ingest=a]"]
    current, superseded = split_superseded(groups)
    assert [g.label for g in current] == ["real", "bm25 [top_k=10]", "bm25 [top_k=20]",
                                          "real+turns [search={'search_turns': 5}]",
                                          "real+turns [search={'search_turns': 8}]"]
    # the older one is superseded although it was listed second; it keeps the label that tells it apart
    assert [(old.label, new.label) for old, new in superseded] == [("real [full_text=None,ingest=a]", "real")]


def test_rsum_rows_of_a_new_decoding_revision_supersede_the_previous_ones() -> None:
    from chronomem.bench.report import group_rows, split_superseded
    from chronomem.summarize.rsum import MEMORY_DECODING, MEMORY_POSTPROCESS, MEMORY_PROMPT

    describe = make_method("rsum", FirstTurnLLM(), MethodConfig()).describe()
    assert describe["memory_decoding"] == MEMORY_DECODING
    before = {k: v for k, v in describe.items() if k not in ("method", "memory_decoding")}  # rows before decoding
    assert before == {"max_sentences": 20, "memory_prompt": MEMORY_PROMPT, "memory_postprocess": MEMORY_POSTPROCESS}
    rows = [_cfg_row("rsum", "old", before, "2026-12-01T00:00:00", f1=0.0),
            _cfg_row("rsum", "new", {k: v for k, v in describe.items() if k != "method"}, "2026-12-02T00:00:00")]
    current, superseded = split_superseded(group_rows(rows, "locomo"))
    assert [g.label for g in current] == ["rsum"]
    assert [(old.config_keys, new.config_keys) for old, new in superseded] == [({"old"}, {"new"})]


def test_the_rsum_decoding_of_a_run_is_its_own_configuration_and_memory(conv30) -> None:  # type: ignore[no-untyped-def]
    from chronomem.bench.methods import SharedIngest, IngestStats, shared_rsum
    from chronomem.summarize.rsum import MEMORY_APPEND_PROMPT, MEMORY_DECODING, MEMORY_PROMPT

    assert MethodConfig().rsum_decoding == MEMORY_DECODING
    default = make_method("rsum", FirstTurnLLM(), MethodConfig()).describe()
    append = make_method("rsum", FirstTurnLLM(), MethodConfig(rsum_decoding=3)).describe()
    assert (default["memory_decoding"], default["memory_prompt"]) == (MEMORY_DECODING, MEMORY_PROMPT)
    assert (append["memory_decoding"], append["memory_prompt"]) == (3, f"{MEMORY_PROMPT}+{MEMORY_APPEND_PROMPT}")
    # one run's shared Rsum memories are kept apart by decoding: the second is built, not reused
    shared, stats, llm = SharedIngest(conv30[0]), IngestStats(), FirstTurnLLM()
    _, built_2 = shared_rsum(llm, conv30[0], shared, MethodConfig(), stats)
    _, built_3 = shared_rsum(llm, conv30[0], shared, MethodConfig(rsum_decoding=3), stats)
    _, again_3 = shared_rsum(llm, conv30[0], shared, MethodConfig(rsum_decoding=3), stats)
    assert (built_2, built_3, again_3) == (True, True, False)


def test_bench_msc_refuses_an_unknown_rsum_decoding() -> None:
    from typer.testing import CliRunner

    from chronomem.cli.bench import app

    res = CliRunner().invoke(app, ["msc", "--methods", "rsum", "--rsum-decoding", "7", "--episodes", "1"])
    assert res.exit_code != 0 and "--rsum-decoding" in res.output and "(1, 2, 3)" in res.output


def test_report_of_several_folders_on_one_sample(tmp_path: Path, conv30) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from chronomem.cli.bench import app

    conv26 = load_locomo(LOCOMO, ["conv-26"])
    a, b, merged = tmp_path / "conv30", tmp_path / "conv26", tmp_path / "samples"
    # full context with another window per conversation: one method in the merged report
    run_locomo(conv30, ["bm25", "full_context"], FirstTurnLLM(context_window=100_000), a, categories=(1, 2, 4),
               sample=9, seed=0)
    run_locomo(conv26, ["bm25", "full_context"], FirstTurnLLM(context_window=60_000), b, categories=(1, 2, 3, 4),
               sample=5, seed=0)
    # an older revision of bm25 in conv-30's folder: reported apart, not mixed into the current rows
    old = [{**r, "config_key": "older", "config": {**r["config"], "ingest": "x"}, "time": "2000-01-01T00:00:00",
            "scores": {**r["scores"], "locomo_f1": 0.0}}
           for r in read_jsonl(a / "results.jsonl") if r["method"] == "bm25"]
    with open(a / "results.jsonl", "a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in old)

    res = CliRunner().invoke(app, ["report", "--out", str(merged), "--from", str(a), "--from", str(b),
                                   "--sample", "5", "--seed", "0", "--data", str(LOCOMO)])
    assert res.exit_code == 0, res.output
    wanted = {q.qid for c in (*conv30, *conv26) for q in select_questions(c, (1, 2, 3, 4), 5, 0)}
    answered = {r["qid"] for f in (a, b) for r in read_jsonl(f / "results.jsonl") if r["method"] == "bm25"}
    summary = json.loads((merged / "summary.json").read_text())
    assert set(summary) == {"bm25", "full_context"}
    assert summary["bm25"]["n"] == len(wanted & answered) == summary["full_context"]["n"]
    assert len(wanted & answered) > 5  # both conversations are in it
    text = (merged / "report.md").read_text()
    assert "reported together" in text and "stratified sample of 5" in text
    assert "### Superseded configurations" in text and "| bm25 [ingest=x] |" in text
    assert (merged / PLOT_BY_CATEGORY).exists() and not (a / "report.md").exists()  # sources are read, not written

    everything = CliRunner().invoke(app, ["report", "--out", str(merged), "--from", str(a), "--all-configs",
                                          "--no-plots"])
    assert everything.exit_code == 0
    assert set(json.loads((merged / "summary.json").read_text())) == {"bm25 [ingest=None]", "bm25 [ingest=x]",
                                                                      "full_context"}
    missing = CliRunner().invoke(app, ["report", "--out", str(merged), "--from", str(tmp_path / "nope")])
    said = " ".join(missing.output.replace("│", " ").split())  # rich draws the error in a box
    assert missing.exit_code != 0 and "--from" in said and "does not exist" in said


class JudgingLLM(FirstTurnLLM):
    """FirstTurnLLM that also judges: answers are CORRECT when they hold the gold answer; replies are
    labelled by ``labels`` in turn (a judge's raw one-word replies)."""

    name = "test-judge"

    def __init__(self, labels: tuple[str, ...] = ("USES",)) -> None:
        super().__init__()
        self.labels = labels

    def chat(self, messages, *, schema=None, max_tokens=512, temperature=0.0, stop=None, purpose="", penalties=None):  # type: ignore[no-untyped-def]
        if purpose != "judge":
            return super().chat(messages, schema=schema, max_tokens=max_tokens, temperature=temperature,
                                stop=stop, purpose=purpose)
        self.calls.append(messages)
        self.purposes.append(purpose)
        user = messages[-1]["content"]
        if "Gold answer:" in user:
            gold = user.split("Gold answer:", 1)[1].splitlines()[0].strip().lower()
            pred = user.split("Generated answer:", 1)[1].splitlines()[0].strip().lower()
            text = "CORRECT" if gold and gold in pred else "WRONG"
        else:
            text = self.labels[sum(1 for p in self.purposes if p == "judge") % len(self.labels) - 1]
        return ChatResult(text=text, usage=CallUsage(prompt_tokens=self.count_tokens(user), completion_tokens=1,
                                                     latency_s=0.001, purpose=purpose))


def test_locomo_judge_scores_answers_after_a_batch_of_them(tmp_path: Path, conv30) -> None:  # type: ignore[no-untyped-def]
    llm = JudgingLLM()
    run_locomo(conv30, ["full_context"], llm, tmp_path, categories=(1, 2, 4, 5), sample=6, seed=0, judge=llm)
    rows = read_jsonl(tmp_path / "results.jsonl")
    assert len(rows) == 6
    for r in rows:
        if r["category"] == 5:
            assert r["scores"]["judge"] is None  # adversarial questions have no gold answer to judge against
        else:
            expected = 1.0 if str(r["gold"]).strip().lower() in r["prediction"].lower() else 0.0
            assert r["scores"]["judge"] == expected
    # the answers ran back to back (sharing the conversation's cached prefix), then the judge
    asked = [p for p in llm.purposes if p in ("answer", "judge")]
    assert asked == ["answer"] * 6 + ["judge"] * 5


def test_msc_consistency_judge(tmp_path: Path) -> None:
    from chronomem.bench.report import msc_table, group_rows
    from chronomem.bench.runner import judge_consistency

    eps = load_msc(MSC, limit=2)
    llm = JudgingLLM(labels=("USES.", "It CONTRADICTS the persona", "neutral", "no idea"))
    run_msc(eps, ["sliding_window"], llm, tmp_path, config=MethodConfig(window_tokens=300), max_replies=2,
            judge=llm)
    replies = [r for r in read_jsonl(tmp_path / "results.jsonl") if r["kind"] == "reply"]
    got = [(r["scores"]["judge_uses"], r["scores"]["judge_contradicts"]) for r in replies]
    assert got == [(1.0, 0.0), (0.0, 1.0), (0.0, 0.0), (None, None)]  # an unreadable label counts as neither
    # per episode, its replies first, then their judgements
    assert [p for p in llm.purposes if p in ("answer", "reply", "judge")][2:4] == ["judge", "judge"]
    # the judge saw the speaker's persona from the first three sessions
    judged = [c for c, p in zip(llm.calls, llm.purposes) if p == "judge"]
    assert eps[0].personas_after_session_3["Speaker 2"][1] in judged[0][-1]["content"]
    table = msc_table(group_rows(read_jsonl(tmp_path / "results.jsonl"), "msc"))
    assert "judge: uses persona %" in table and "| sliding_window | 2 | 4 | " in table
    assert "| 33.3 | 33.3 |" in table  # 1 of the 3 labelled replies each; the unlabelled one left out
    # no persona to check against: no call, no score
    n = len(llm.calls)
    assert judge_consistency(llm, [], "Speaker 2", "Speaker 1", "hi", "hello") == {"judge_contradicts": None,
                                                                                   "judge_uses": None}
    assert len(llm.calls) == n


def test_judge_spec_that_names_the_answer_model_reuses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.cli.bench import _judge

    monkeypatch.delenv("CHRONOMEM_LLM", raising=False)
    answer_model = object()
    assert _judge(None, None, answer_model, "off") is None
    # `--judge local` with no `--llm`: both resolve to the default local model, so no second copy is loaded
    assert _judge("local", None, answer_model, "off") is answer_model
    assert _judge("openai:m@http://h/v1", "openai:m@http://h/v1", answer_model, "off") is answer_model


def test_bad_run_parameters_are_refused_by_name_before_anything_is_written(tmp_path: Path, conv30) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from chronomem.cli.bench import app

    out = tmp_path / "run"
    runner = CliRunner()
    for args, named in [(["locomo", "--categories", "1,x"], "--categories"),
                        (["locomo", "--categories", "7"], "--categories"),
                        (["locomo", "--sample", "0"], "--sample"),
                        (["msc", "--episodes", "-1"], "--episodes"),  # would have run all but the last episode
                        (["msc", "--max-replies", "-2"], "--max-replies"),
                        (["locomo", "--top-k", "0"], "--top-k")]:
        res = runner.invoke(app, [*args, "--methods", "bm25", "--data", str(LOCOMO if args[0] == "locomo" else MSC),
                                  "--llm", "openai:none@http://127.0.0.1:9/v1", "--out", str(out)])
        assert res.exit_code == 2 and named in res.output, (args, res.output)
    assert not out.exists()
    # the library refuses the same, by field
    with pytest.raises(ValidationError, match="categories"):
        run_locomo(conv30, ["bm25"], FirstTurnLLM(), out, categories=(0, 4))
    with pytest.raises(ValidationError, match="sample"):
        run_locomo(conv30, ["bm25"], FirstTurnLLM(), out, sample=-3)
    with pytest.raises(ValidationError, match="max_replies"):
        run_msc(load_msc(MSC, limit=1), ["bm25"], FirstTurnLLM(), out, max_replies=-1)
    with pytest.raises(ValidationError, match="limit"):
        load_msc(MSC, limit=-1)
    assert not out.exists()


def test_a_run_that_selects_no_question_says_so_instead_of_a_traceback(tmp_path: Path) -> None:
    import json as _json

    from typer.testing import CliRunner

    from chronomem.cli.bench import app

    data = _json.loads(LOCOMO.read_text())[:1]
    data[0]["qa"] = [q for q in data[0]["qa"] if q["category"] != 3]  # no open-domain question left
    path = tmp_path / "locomo.json"
    path.write_text(_json.dumps(data))
    res = CliRunner().invoke(app, ["locomo", "--methods", "bm25", "--categories", "3", "--data", str(path),
                                   "--llm", "openai:none@http://127.0.0.1:9/v1", "--out", str(tmp_path / "run")])
    assert res.exit_code == 1 and "no results" in res.output, res.output
