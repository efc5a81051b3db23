"""bench_evolving for one set; answer generation recorded with the check's own question.
usage: answer_arms.py SET MEMDIR OUT.jsonl [--select SELECT.json] [--cache-only] [k=v ANSWER_CONFIG overrides]
--select: only these original questions call the model (others answer "stub"); --cache-only: no model call."""
import dataclasses, json, os, runpy, sys
import chronomem.answering as A
import chronomem.retrieve.answer as RA
from chronomem.errors import ModelError
args = sys.argv[1:]
cache_only = "--cache-only" in args; args = [a for a in args if a != "--cache-only"]
want = None
if "--select" in args:
    i = args.index("--select"); want = set(json.load(open(args[i + 1]))); del args[i:i + 2]
# every model call but a selected answer's is cache-only (the search's evaluator/intent replies too, so
# both arms see the same evidence as a cache-only replay)
from chronomem.providers import local_llama
allow = {"on": False}
def _guard(real):
    def _complete(self, *a, **k):
        if not allow["on"]:
            raise ModelError("cache-only")
        return real(self, *a, **k)
    return _complete
for name in dir(local_llama):
    c = getattr(local_llama, name)
    if isinstance(c, type) and "_complete" in vars(c):
        c._complete = _guard(c._complete)
st, mem, out = args[:3]
over = {}
for kv in args[3:]:
    k, v = kv.split("=", 1)
    over[k] = {"true": True, "false": False}.get(v, v)
if over:
    A.ANSWER_CONFIG = dataclasses.replace(A.ANSWER_CONFIG, **over)
f = open(out, "w")
cur = {"q": None}
real_answer, real_gen = A.answer, RA.generate
def answer(store, registry, models, question, **kw):
    cur["q"] = question
    return real_answer(store, registry, models, question, **kw)
def gen(llm, question, context, *, as_of, max_tokens=64):
    prompt = RA.answer_messages(question, context, as_of)[-1]["content"]
    if want is not None and cur["q"] not in want:
        text = "stub"
    else:
        allow["on"] = not cache_only
        try:
            text, _ = real_gen(llm, question, context, as_of=as_of, max_tokens=max_tokens)
        except ModelError:
            text = "UNCACHED"
        finally:
            allow["on"] = False
    f.write(json.dumps({"set": st, "orig": cur["q"], "question": question, "as_of": str(as_of),
                        "prompt": prompt, "answer": text}) + "\n"); f.flush()
    return text, None
A.answer, A.generate = answer, gen
sys.argv = ["bench_evolving.py", "--set", st, "--extraction", "v10", "--cache",
            os.environ.get("CACHE", "bench-out/evolving/cache.sqlite"), "--out", mem]
runpy.run_path("benchmarks/bench_evolving.py", run_name="__main__")
