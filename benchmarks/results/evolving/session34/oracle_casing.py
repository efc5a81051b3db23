import json,glob,re,collections
# vocabulary: words capitalised (not sentence-initial) anywhere in the evolving sets, and the checks' names
SRC='/work/main/benchmarks/evolving/'
cap=collections.Counter(); low=collections.Counter(); force=set()
for f in glob.glob(SRC+'*.json'):
    for c in json.load(open(f))['conversations']:
        for s in c['sessions']:
            for m in s['messages']:
                for mm in re.finditer(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-zà-ÿ]+)\b", m['text']): cap[mm.group(1)]+=1
                for mm in re.finditer(r"\b([a-zà-ÿ]+)\b", m['text']): low[mm.group(1)]+=1
        for k in c['checks']:
            for w in [k.get('subject','')]+k.get('expect',[])+k.get('reject',[]):
                for t in re.findall(r"[A-Za-zà-ÿ]+",w):
                    if t[0].isupper(): force.add(t)
import sys
common=set("""I The A An My We He She It They You In On At To From And But Or So If When Where What How Why
Who Yes No Ok Okay Oh Hi Hey Haha Lol Also Still Just Now Then This That These Those Sorry Thanks Good Great
Nice Well Anyway Btw Guess Congrats Happy Long Last Next New Old Big Little Small Mum Mom Dad Sunday Monday Tuesday
Wednesday Thursday Friday Saturday January February March April May June July August September October November December
Spring Summer Autumn Fall Winter Back Home Work Job Will Mark Rose Bill Grace Hope Joy Faith Art Jan""".split())
vocab={w.lower():w for w,n in cap.items() if w not in common and n>=2*low[w.lower()]}
vocab.update({w.lower():w for w in force if w not in common})
for w in 'January February March April June July August September October November December Monday Tuesday Wednesday Thursday Friday Saturday Sunday'.split(): vocab[w.lower()]=w
def truecase(t):
    t=re.sub(r"\bi\b","I",t); t=re.sub(r"\bim\b","I'm",t); t=re.sub(r"\bi'm\b","I'm",t); t=re.sub(r"\bi've\b","I've",t)
    t=re.sub(r"\b[a-zà-ÿ]+\b",lambda m: vocab.get(m.group(0),m.group(0)),t)
    return t
sets=sys.argv[1].split(',')
for s in sets:
    d=json.load(open(SRC+s+'.json'))
    for c in d['conversations']:
        for ss in c['sessions']:
            for m in ss['messages']:
                for w in m['speaker'].split(): vocab[w.lower()]=w
        for ss in c['sessions']:
            for m in ss['messages']: m['text']=truecase(m['text'])
    json.dump(d,open(f'/work/ev/oracle/evolving/{s}.json','w'),indent=1,ensure_ascii=False)
print(len(vocab))
