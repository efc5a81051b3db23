"""bench_evolving for one set where answer() calls the model only for the selected questions (others: stub).
usage: answer_sel.py SET MEMDIR OUT.jsonl SELECT.json [--cache-only] [k=v overrides]
SELECT.json: list of questions (of this set) to answer for real."""
import dataclasses, json, os, runpy, sys
import chronomem.answering as A
import chronomem.retrieve.answer as RA
from chronomem.errors import ModelError
args = sys.argv[1:]
cache_only = "--cache-only" in args
args = [a for a in args if a != "--cache-only"]
st, mem, out, sel = args[:4]
if cache_only:
    from chronomem.providers import local_llama
    def _raise(self, *a, **k):
        raise ModelError("cache-only")
    for name in dir(local_llama):
        c = getattr(local_llama, name)
        if isinstance(c, type) and hasattr(c, "_complete"):
            c._complete = _raise
over = {}
for kv in args[4:]:
    k, v = kv.split("=", 1)
    over[k] = {"true": True, "false": False}.get(v, v)
if over:
    A.ANSWER_CONFIG = dataclasses.replace(A.ANSWER_CONFIG, **over)
want = set(json.load(open(sel)))
f = open(out, "w")
real = RA.generate
def gen(llm, question, context, *, as_of, max_tokens=64):
    q = question
    hit = any(q == w or q.startswith(w) or w.startswith(q) or q in w for w in want)
    if not hit:
        return "stub", None
    try:
        text, u = real(llm, question, context, as_of=as_of, max_tokens=max_tokens)
    except ModelError:
        text, u = "UNCACHED", None
    f.write(json.dumps({"question": question, "answer": text}) + "\n"); f.flush()
    return text, u
A.generate = gen
sys.argv = ["bench_evolving.py", "--set", st, "--extraction", "v10", "--cache", os.environ.get("CACHE", "bench-out/evolving/cache.sqlite"), "--out", mem]
runpy.run_path("benchmarks/bench_evolving.py", run_name="__main__")
