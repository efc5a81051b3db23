"""State checks on evolving conversations: does the memory notice when facts change?

Each conversation of ``benchmarks/evolving/{tune,check}.json`` (written for this project)
spans years: moves, job changes, endings, a past told late ("from 2014 to 2016 I worked
at a bakery"), and relations asked from the other side ("Who is Jonas married to?" after
"Jonas and I got married").  Its sessions go through :meth:`Memory.add` with the model, in
order, into a fresh SQLite file; then every check runs:

* ``facts``: :meth:`Memory.facts` for ``subject`` / ``relation`` (``as_of``: default :data:`NOW`);
  passes when every ``expect`` string is in some returned object (case-insensitive) and
  no ``reject`` string is in any;
* ``answer``: :meth:`Memory.answer` for ``question`` as of :data:`NOW`; passes when every
  ``expect`` string is in the answer's text.

Printed: checks passed per conversation and in all, and each failure with what came back.
``tune.json`` is what rules may be written from; ``check.json`` was written with it, before
any change, and is run to see whether a change generalises.  Resumable: a conversation's
memory file in ``--out`` is reused (its extraction is not redone); model replies go through
the response cache (``--cache``).

    .venv/bin/python benchmarks/bench_evolving.py --set tune --extraction v4 \\
        --cache bench-out/evolving/llm-cache.sqlite --out bench-out/evolving/v4
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "evolving"
#: the sets: every ``evolving/*.json`` (tune first, then check, check2, … as they were written)
SETS = tuple(sorted((p.stem for p in HERE.glob("*.json")), key=lambda n: (n != "tune", len(n), n)))


#: "Now" for every check without an ``as_of``: answer() writes its evidence "as of" a time, so a fixed
#: one keeps the prompts, and the saved response cache, the same from one run to the next.
NOW = "2026-12-04T00:00:00+00:00"


def run_check(mem: Any, user: str, check: dict[str, Any], other_side: bool = True,
              now: str = NOW, config: Any = None, speaker: str | None = None) -> tuple[bool, str]:
    """One check → (passed, what came back); ``other_side=False``: ``facts()`` as before session 24
    (symmetric and inverse facts only from the side they were stored on); ``config``: the
    ``SearchConfig`` ``answer()`` runs with (default: its own); ``speaker``: who "I / me / my" in a
    question is (the user's name in the conversation, as an app would pass it)."""
    expect = [e.lower() for e in check.get("expect", [])]
    reject = [r.lower() for r in check.get("reject", [])]
    if check["kind"] == "facts":
        facts = mem.facts(user_id=user, subject=check["subject"], relation=check.get("relation"),
                          as_of=check.get("as_of") or now, other_side=other_side)
        objects = [f"{f.subject} {f.relation} {f.object}" for f in facts]
        low = [o.lower() for o in objects]
        ok = all(any(e in o for o in low) for e in expect) and not any(r in o for r in reject for o in low)
        return ok, "; ".join(objects) or "(none)"
    if check["kind"] == "answer":
        text = mem.answer(check["question"], user_id=user, as_of=now, config=config, speaker=speaker).text
        return all(e in text.lower() for e in expect), text
    raise SystemExit(f"unknown check kind {check['kind']!r}")


def describe(check: dict[str, Any]) -> str:
    if check["kind"] == "facts":
        return f"facts {check['subject']} {check.get('relation') or '*'} @{check.get('as_of') or 'now'}"
    return f"answer {check['question']!r}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=SETS, default="tune")
    ap.add_argument("--extraction", default="v4", help="the write path's extraction method (Config.extraction)")
    ap.add_argument("--cache", required=True, help="on-disk response cache (SQLite)")
    ap.add_argument("--out", required=True, help="folder for the conversations' memory files and results.jsonl")
    ap.add_argument("--only", default="", help="comma-separated conversation names")
    ap.add_argument("--no-other-side", action="store_true",
                    help="facts() without reading symmetric/inverse facts from the other side (the old behaviour)")
    ap.add_argument("--organisation-questions", action="store_true",
                    help="only the answer checks that ask where someone works or studies (those the "
                         "organisation hint rewrites); results-<set>-organisation[-no-hint].jsonl")
    ap.add_argument("--facts-only", action="store_true",
                    help="only the facts() checks: no answer model call, so a rule change can be judged from "
                         "the cached extraction replies alone; results-<set>-facts.jsonl")
    ap.add_argument("--no-speaker", action="store_true",
                    help="answer() without telling it who 'I' is (as before session 28; only check10 asks "
                         "in the first person); results-<set>-no-speaker.jsonl")
    ap.add_argument("--no-organisation-hint", action="store_true",
                    help="answer() without the organisation hint (SearchConfig.organisation_hint=False)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    os.environ["CHRONOMEM_LLM_CACHE"] = args.cache
    from dataclasses import replace
    from datetime import datetime, timezone

    from chronomem import Config, Memory
    from chronomem.registry import RelationRegistry
    from chronomem.retrieve.answer import organisation_hint
    from chronomem.retrieve.intents import analyze
    from chronomem.retrieve.search import ANSWER_CONFIG

    config = replace(ANSWER_CONFIG, organisation_hint=False) if args.no_organisation_hint else None
    registry = RelationRegistry()

    def asks_organisation(check: dict[str, Any]) -> bool:
        if check["kind"] != "answer":
            return False
        analysis = analyze(check["question"], registry, now=datetime.now(timezone.utc)).as_dict()
        return organisation_hint(analysis, registry) is not None

    data = json.loads((HERE / f"{args.set}.json").read_text())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    Path(args.cache).parent.mkdir(parents=True, exist_ok=True)
    only = {x for x in args.only.split(",") if x}
    passed = total = 0
    rows = []
    for conv in data["conversations"]:
        if only and conv["name"] not in only:
            continue
        db = out / f"{args.set}-{conv['name']}.db"
        user = conv["user"]
        # the user's own name in the conversation: "I / my" in a question is them (an app passes it the same way)
        speaker = None if args.no_speaker else next(
            (m["speaker"] for sess in conv["sessions"] for m in sess["messages"] if m["speaker"].lower() == user.lower()),
            None)
        with Memory(str(db), config=Config(extraction=args.extraction)) as mem:
            # every time, not only into a new file: adding is idempotent by turn id, so a run stopped
            # partway (a crash, a model error) finishes the ingest instead of judging half a memory
            t0 = time.perf_counter()
            for s in conv["sessions"]:
                mem.add(s["messages"], user_id=user, session_id=s["session_id"], timestamp=s["timestamp"])
            mem.extract_pending(user_id=user)  # turns whose extraction failed before
            turns = sum(len(s["messages"]) for s in conv["sessions"])
            print(f"{conv['name']}: {turns} turns ingested in {time.perf_counter() - t0:.0f} s")
            n_ok = 0
            checks = [c for c in conv["checks"] if asks_organisation(c)] if args.organisation_questions \
                else conv["checks"]
            if args.facts_only:
                checks = [c for c in checks if c["kind"] == "facts"]
            for check in checks:
                ok, got = run_check(mem, user, check, other_side=not args.no_other_side, config=config,
                                    speaker=speaker)
                n_ok += ok
                rows.append({"conversation": conv["name"], "check": describe(check), "passed": ok, "got": got})
                if not ok:
                    print(f"  FAIL {conv['name']}: {describe(check)} expected {check.get('expect')} "
                          f"rejecting {check.get('reject', [])}: got {got}")
        print(f"{conv['name']}: {n_ok}/{len(checks)} checks passed")
        passed += n_ok
        total += len(checks)
    suffix = ("-no-other-side" if args.no_other_side else "") + \
        ("-organisation" if args.organisation_questions else "") + ("-no-hint" if args.no_organisation_hint else "") + \
        ("-facts" if args.facts_only else "") + ("-no-speaker" if args.no_speaker else "")
    with (out / f"results-{args.set}{suffix}.jsonl").open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    print(f"{args.set} set, extraction {args.extraction}{' (facts() without other side)' if args.no_other_side else ''}: "
          f"{passed}/{total} checks passed ({passed / max(1, total):.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
