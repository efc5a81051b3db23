"""Replies: what an answer tells, read with the question before it (rules 13 and 14, sessions 28–30).

A line often says a state only with its question: "Still in Athens?" — "Yes!" (:func:`home_answered`),
"And your sister?" — "Carmen is …" (:func:`kin_answered`), "Any news from Petra?" — "She left Skoda last
year and moved to Munich" (:func:`asked_person`, :func:`told_states`), "How's Madrid?" — "I moved here last
September" (:func:`moved_here`), "And the tall girl?" — "Femke! We got engaged in February" or "After
everything with Hendra." — "We separated in 2019" (:func:`couple_answered`), "Still at Glovo?" — "No, the
layoffs got me in March last year" (:func:`job_answered`).  The model reads the answer alone and writes
nothing, or the asker's words as the answerer's facts.

All functions are pure and share :mod:`.states`' vocabulary (names, clause subjects, plain clauses);
:func:`~chronomem.extract.observations.postprocess_observations` applies them under
:data:`~chronomem.extract.observations.STATE_RULES`, each pair of lines a question and its answer.
"""

from __future__ import annotations

import re

# the shared vocabulary of the state rules (private to the extract package)
from .states import (KIN, KinMention, LineState, _ADV, _DIVORCED, _KIN_WORDS, _NAME, _NOT_NAMES, _ROLE,
                     _SUBJECT_TOKEN, _TIME_NAMES, _WORK_CUE, _bare_name, _not_a_subject_name, _plain_clause,
                     sentences, with_subject)

_ASKED_KIN = re.compile(rf"\byour\s+(?:(?:little|big|older|younger|new)\s+)?({_KIN_WORDS})s?\b(?!,?\s+(?-i:[A-Z]))",
                        re.IGNORECASE)
_INTERJECTIONS = ("oh", "ah", "well", "yes", "yeah", "no", "haha", "ha", "hmm", "so", "actually", "honestly",
                  "ay", "aw", "ugh", "uh", "um", "omg", "ooh", "lol", "wow")  # session 30: "Ay... we broke up in July"
#: the answer opens with a name and what that person is or did ("Carmen is still in Seville")
_OPENING = re.compile(rf"^\s*(?:(?:{'|'.join(_INTERJECTIONS)})\W+)*(?-i:([A-Z][a-z][\w'-]*))"
                      r"(?:'s|\s+(?:is|was|has|had|just|got|lives|works|finally|still|recently|(?-i:[a-z]+ed)))\b",
                      re.IGNORECASE)
#: words an answer may open with that name nobody (any case)
_NOT_A_NAME = (frozenset(w.lower() for w in _NOT_NAMES) | frozenset(_INTERJECTIONS)
               | {"she", "he", "they", "we", "it", "my", "our", "the", "that", "this", "there", "thanks", "thank", "good",
                  "great", "fine"})


_ASKED_HOME = re.compile(r"\bwhere (?:are|do) you (?:based|living|live|staying)\b|"
                         r"\bwhere (?:are|r) you(?: now| these days)?\W*$", re.IGNORECASE)  # session 30: "Wait where ARE you??"
_BARE_PLACE = re.compile(r"^\s*(?:(?:in|still in|now in)\s+)?(?-i:([A-Z][a-z][\w'-]*(?: [A-Z][a-z][\w'-]*)?))\s*[.!,]",
                         re.IGNORECASE)


#: session 28: "Still in Athens?", "Are you still in Prague?" — asked of the listener's home (not "Is Tom still in …?")
_ASKED_STILL = re.compile(r"(?:^|[.!?,]\s*|\bare you\s+|\byou(?:'re| are)\s+)still (?:living |based )?in "
                          r"(?-i:([A-Z][a-z][\w'-]*(?: [A-Z][a-z][\w'-]*)?))\b[^.!?]*\?", re.IGNORECASE)
_YES = re.compile(r"\s*(?:yes|yeah|yep|yup)\b(\W*)", re.IGNORECASE)
_STILL_IN = re.compile(r"\s*(?:still\s+)?(?:(?:here\s+)?in\s+)?(?-i:([A-Z][a-z][\w'-]*(?: [A-Z][a-z][\w'-]*)?))",
                       re.IGNORECASE)


def _still_there(place: str, answer: str) -> bool:
    """Does ``answer`` confirm "still in ``place``?": "Still in Athens, and …", "Yes, still in Prague.",
    "Yes! Snow up to my knees."; not "No, …", "Yes, but in Otaru now", nor another place."""
    if re.match(r"\s*(?:(?:yes|yeah|yep)\W+)?still here\b", answer, re.IGNORECASE):
        return True  # session 30: "Still in Cebu?" — "Still here lol, where else"
    yes = _YES.match(answer)
    rest = answer[yes.end():] if yes else answer
    if yes and re.search(r"[!.]", yes.group(1)):
        return True  # "Yes!": the answer's next sentence is news of its own
    if yes and re.match(r"\s*but\b", rest, re.IGNORECASE):
        return False
    m = _STILL_IN.match(rest)
    if m is not None and m.group(1).lower() not in _NOT_A_NAME:
        return m.group(1) == place
    return yes is not None


def home_answered(question: str, answer: str) -> str | None:
    """A home named as the whole answer to "where are you based / living?": "Toronto. I work …" →
    ``"Toronto"``; ``None`` unless the answer opens with a place name and a full stop or comma.
    Also a home asked after and confirmed (session 28): "Still in Athens?" answered "Still in Athens,
    and …" or "Yes, still in Prague." (not "No, …", nor a yes that names another place)."""
    still = _ASKED_STILL.search(question)
    if still is not None:
        return still.group(1) if _still_there(still.group(1), answer) else None
    if not _ASKED_HOME.search(question):
        return None
    m = _BARE_PLACE.match(answer)
    if m is None or m.group(1).lower() in _NOT_A_NAME:
        return None
    return m.group(1)


#: a person asked after by name alone ("And Priya?", "How's Adam doing?")
_ASKED_NAME = re.compile(r"^\s*(?:(?:and|so|what about|how about|how's|how is)\s+)(?-i:([A-Z][a-z][\w'-]*))"
                         r"(?:\s+(?:doing|these days|now))?\s*\?\s*$", re.IGNORECASE)
#: the answer opens with "my wife …" (after an interjection)
_OPENING_KIN = re.compile(rf"^\s*(?:(?:{'|'.join(_INTERJECTIONS)})\W+)*my\s+({_KIN_WORDS})\b(?!,?\s+(?-i:[A-Z]))",
                          re.IGNORECASE)


def kin_answered(question: str, asked: str, answer: str, answerer: str) -> KinMention | None:
    """A relative named on one side of a question and its answer and called kin on the other:
    "And your sister?" — "Carmen is still in Seville" → Carmen is the answerer's sister; "And
    Priya?" — "My wife just started her PhD" → Priya is the answerer's wife.  ``asked``: who asked
    (a name that is theirs is not the relative).  ``None`` unless both sides match.

    >>> kin_answered("And Priya?", "Mei", "My wife just started her PhD at IISc.", "Ravi")
    KinMention(holder='Ravi', relation='married_to', name='Priya', word='wife')
    """
    by_name, kin_first = _ASKED_NAME.match(question), _OPENING_KIN.match(answer)
    if by_name is not None and kin_first is not None:
        name, word = by_name.group(1), kin_first.group(1).lower()
        if name.lower() in _NOT_A_NAME or name in (asked, answerer):
            return None
        return KinMention(answerer, KIN[word], name, word)
    q = _ASKED_KIN.search(question)
    a = _OPENING.match(answer)
    if q is None or a is None:
        return None
    name = a.group(1)
    if name.lower() in _NOT_A_NAME or name in (asked, answerer):
        return None
    word = q.group(1).lower()
    return KinMention(answerer, KIN[word], name, word)



#: words a question opens with that name nobody ("Does Petra know …?")
_QUESTION_WORDS = frozenset("Do Does Did Any Anything Is Are Was Were Has Have Had Can Could Would Will How What "
                            "Who Where When Why Which And So Still Happy Congratulations Congrats Even Really Nice "
                            "Good Great Seriously Wait".split())
_Q_NAME = re.compile(r"(?<![\w'])([A-Z][a-z][\w-]*)\b(?!')")
#: a word before a name that makes it a place or an employer, not a person asked after ("still at Samsung",
#: "still in Miami", "refusing to leave Munich")
_NOT_PERSON_BEFORE = re.compile(r"\b(?:in|at|to|for|with|from|of|near|around|leave|leaving|left|visit|visiting|"
                                r"the)\s+$", re.IGNORECASE)


def asked_person(question: str, asker: str, answerer: str) -> str | None:
    """The one person a question asks after by name: "Any news from Petra?", "How's Minho doing, still at
    Samsung?", "Is Martina still in Miami?", "And Petra, is she still refusing to leave Munich?" → that
    name; ``None`` when its question sentences name nobody else or more than one.  A name after "in",
    "at", "to" … is a place or an employer (but "news from Petra" is a person).

    >>> asked_person("Cute. Any news from Petra?", "Vesna", "Radek")
    'Petra'
    >>> asked_person("How's Minho doing, still at Samsung?", "Ingrid", "Hyejin")
    'Minho'
    """
    names: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", question.strip()):
        if not sentence.rstrip().endswith("?"):
            continue
        for m in _Q_NAME.finditer(sentence):
            name, before = m.group(1), sentence[:m.start()]
            if (name in (asker, answerer) or name in _QUESTION_WORDS or name.lower() in _NOT_A_NAME
                    or _not_a_subject_name(name) or name in _TIME_NAMES):
                continue
            if _NOT_PERSON_BEFORE.search(before) and not re.search(r"\bnews (?:from|of)\s+$", before, re.IGNORECASE):
                continue
            if name not in names:
                names.append(name)
    return names[0] if len(names) == 1 else None


#: what an answer tells of the person asked after, in clauses whose subject is "he" or "she"
#: (pattern, relation, ended, only when the question or answer speaks of work)
_TOLD: tuple[tuple[re.Pattern[str], str, bool, bool], ...] = (
    (re.compile(rf"\b(?:moved|relocated) (?:back |up |down |over )?to {_NAME}"), "lives_in", False, False),
    (re.compile(rf"\bleft for {_NAME}"), "lives_in", False, False),  # session 30: "He left for Dubai last year"
    (re.compile(rf"\b(?:lives|living) in {_NAME}"), "lives_in", False, False),
    (re.compile(rf"(?:'s| is) {_ADV}in {_NAME}(?![^.!?,]*\bfor (?:a|an|the|\d+) )"), "lives_in", False, False),
    (re.compile(rf"\b(?:works|working) (?:at|for) {_NAME}"), "works_at", False, False),
    (re.compile(rf"(?:'s| is) {_ADV}(?:at|with) {_NAME}"), "works_at", False, False),
    (re.compile(rf"(?:'s| is) {_ADV}(?:an? |the )(?:[a-z]+ ){{0,2}}(?:{_ROLE}) (?:at|for|with) {_NAME}"), "works_at",
     False, False),
    (re.compile(rf"\b(?:joined|switched to) {_NAME}"), "works_at", False, False),
    (re.compile(rf"\b(?:took|got|accepted) (?:an? |the )?(?:[a-z]+ ){{0,2}}(?:job|post|position|role) (?:at|with) {_NAME}"),
     "works_at", False, False),
    (re.compile(rf"\bfor (?:an? |the )(?:new )?(?:[a-z]+ ){{0,2}}(?:job|post|position|role) (?:at|with) {_NAME}"),
     "works_at", False, False),  # session 30: "moved back to Helsinki for a job at Supercell"
    (re.compile(rf"\b(?:left|quit) {_NAME}"), "works_at", True, False),
    (re.compile(rf"\bwent back to {_NAME}"), "works_at", False, True),
)
#: "they sent him to Austin": the person is the object
_SENT = re.compile(rf"\b(?:sent|posted|transferred|moved) (?:him|her) to {_NAME}")
#: "BHP moved him to Perth in June": the one who sent is the employer
_SENT_BY = re.compile(rf"{_NAME} {_ADV}(?:sent|posted|transferred|moved) (?:him|her) to [A-Z]")
#: a question that speaks of work ("still at Naver?"), so "went back to Samsung" is a job
_ASKED_WORK = re.compile(r"\b(?:still|now) (?:at|with|working)\b|\bwork(?:s|ing)? (?:at|for)\b|\bjob\b", re.IGNORECASE)


def told_states(question: str, asker: str, answer: str, answerer: str) -> list[LineState]:
    """Where the person a question asks after lives or works, as its answer tells it of "he" or "she":
    "Any news from Petra?" — "She left Skoda last year and moved to Munich, she's with BMW now." →
    Petra ``works_at`` Skoda (ended), ``lives_in`` Munich, ``works_at`` BMW, each with the time words
    of its clause (the sentence's first ones when it has none).  "left X" is a job only beside another
    job in the answer; "went back to X" only when the question or answer speaks of work.

    >>> [(s.who, s.relation, s.name, s.ended) for s in told_states("Cute. Any news from Petra?", "Vesna",
    ...     "She left Skoda last year and moved to Munich, she's with BMW now.", "Radek")]
    [('Petra', 'works_at', 'Skoda', True), ('Petra', 'lives_in', 'Munich', False), ('Petra', 'works_at', 'BMW', False)]
    """
    who = asked_person(question, asker, answerer)
    if who is None:
        return []
    work = bool(_ASKED_WORK.search(question) or _WORK_CUE.search(answer))
    out: list[LineState] = []
    for sentence in re.split(r"(?<=[.!?])\s+", answer.strip()):
        if sentence.rstrip().endswith("?"):
            continue
        subjects = [m for m in _SUBJECT_TOKEN.finditer(sentence)
                    if not (m.group("name") and _not_a_subject_name(m.group("name")))]
        found: list[tuple[int, str, str, bool]] = []
        for rx, rel, ended, needs_work in _TOLD:
            if needs_work and not work:
                continue
            for m in rx.finditer(sentence):
                before = [t for t in subjects if t.start() < m.start()]
                if not before or not before[-1].group("pronoun") or not _plain_clause(sentence, m.start()):
                    continue
                found.append((m.start(), rel, _bare_name(m), ended))
        found += [(m.start(), "lives_in", _bare_name(m), False) for m in _SENT.finditer(sentence)]
        found += [(m.start(), "works_at", employer, False) for m in _SENT_BY.finditer(sentence)
                  if not _not_a_subject_name(employer := _bare_name(m)) and employer not in _QUESTION_WORDS]
        jobs = {name for _, rel, name, ended in found if rel == "works_at" and not ended}
        for at, rel, name, ended in sorted(found):
            if ended and not jobs - {name}:
                continue  # "left X" with no other job told: a home or a job, the answer does not say
            if name in _NOT_NAMES or name in _TIME_NAMES or _not_a_subject_name(name) or name == who:
                continue
            state = LineState(rel, name, sentence.strip(), ended, who=who, clause=_clause_after(sentence, at))
            if state not in out:
                out.append(state)
    return out


def _clause_after(sentence: str, at: int) -> str:
    """The clause that begins at ``at``: up to the next comma, semicolon or "and" + pronoun."""
    m = re.search(r"[,;]|\band (?:he|she|they|I|we)\b", sentence[at:])
    return sentence[at:at + m.start()] if m else sentence[at:]


#: a place a question asks after ("How's Madrid?", "So how is Prague treating you?", "How are things in
#: Buenos Aires?", "How does Tashkent feel …?", "are you visiting Gothenburg?", "having you back in Nairobi!"):
#: "here", or "back" with no place of its own, in the answer is that place
_PLACE_ASKED = re.compile(r"(?:\bhow(?:'s| is| are things in| is life in|'s life in| does)\s+|"
                          r"\b(?:in|to|visiting|visit)\s+)(?-i:([A-Z][a-z][\w'-]*(?: [A-Z][a-z][\w'-]*)?))",
                          re.IGNORECASE)
_MOVED_HERE = re.compile(rf"\b(?:I|[Ww]e)(?:'ve| have)? {_ADV}(?:moved|came|relocated) (?:over |straight |right )?here\b|"
                         rf"\b(?:I|[Ww]e) {_ADV}live here\b|"  # session 30: "Not a holiday, we live here now!"
                         rf"\b(?:I|[Ww]e)(?:'ve| have)? {_ADV}(?:moved|came|come|been) back\b"
                         r"(?! (?:to|from|at|home|in [A-Z]|for)\b)|"
                         # session 30: "We've been here since January last year" (a stay, not "for a week")
                         rf"\b(?:I|[Ww]e)(?:'ve| have) {_ADV}been here (?=since\b|for (?:a|an|one|two|three|four|five|"
                         r"six|seven|eight|nine|ten|a few|several|many|\d+) (?:years?|months?)\b)")
#: session 30: "How long have you been in Dubai now?" — "Since May last year."
_HOW_LONG = re.compile(r"\bhow long have you been (?:living |based )?in\b", re.IGNORECASE)
_SINCE_OPENING = re.compile(r"^\s*(?:(?:oh|well|yes|yeah|hmm)\W+)*since\b", re.IGNORECASE)


def moved_here(question: str, answer: str) -> list[LineState]:
    """"How's Madrid?" — "I moved here last September for the MBA", "Are you visiting Gothenburg?" — "Not
    visiting, living. We moved back in June last year": the answerer ``lives_in`` the one place the question
    names, from the time words of the clause that says it (``[]`` when it names none or several).

    >>> [(s.relation, s.name) for s in moved_here("How's Madrid? Surviving the heat?", "Barely. I moved here last September.")]
    [('lives_in', 'Madrid')]
    """
    places = {m.group(1) for m in _PLACE_ASKED.finditer(question)
              if m.group(1).lower() not in _NOT_A_NAME and m.group(1) not in _QUESTION_WORDS
              and not _not_a_subject_name(m.group(1))}
    if len(places) != 1:
        return []
    place = places.pop()
    if _HOW_LONG.search(question) and _SINCE_OPENING.match(answer):
        first = re.split(r"(?<=[.!?])\s+", answer.strip())[0]
        return [LineState("lives_in", place, first, clause=first)]
    return _said_in(answer, _MOVED_HERE, "lives_in", place)


def _said_in(answer: str, pattern: re.Pattern[str], relation: str, name: str) -> list[LineState]:
    """A ``relation`` ``name`` state per plain clause of ``answer`` that ``pattern`` finds, each with its clause
    (whose time words it takes)."""
    return [LineState(relation, name, sentence.strip(), clause=sentence[m.start():])
            for sentence in map(with_subject, sentences(answer.strip()))
            for m in pattern.finditer(sentence) if _plain_clause(sentence, m.start())]


#: a couple told without the partner's name in its clause: "Femke! We got engaged in February" (the line opens
#: with the name), "he proposed on the beach in October!" or "I finally asked her, and she said yes!" (the
#: question names them: "And Felipe, anything to report?"); session 30: a marriage ("Is it true Wayan sends
#: memes …?" — "We've only been married since May last year") and a separation ("After everything with
#: Hendra." — "We separated in 2019 and the divorce was final in February last year")
_GOT_ENGAGED = re.compile(r"\b(?:[Ww]e|I) (?:just |finally |recently )?got engaged\b|\b(?:[Hh]e|[Ss]he) "
                          r"(?:just |finally )?proposed\b|\bI (?:just |finally )?(?:asked (?:her|him)|proposed)\b"
                          r"[^.!?]*\b(?:she|he) said yes\b")
_GOT_MARRIED = re.compile(r"\b[Ww]e(?:'ve| have)? (?:only |just |finally |recently )?(?:got|been) married\b")
_SEPARATED = re.compile(r"\b[Ww]e (?:just |finally |recently )?(?:separated|split up|broke up|(?:got )?divorced)\b")
_OPENING_NAME = re.compile(r"^\s*(?:(?:well|oh|yes|yeah)\W+)*(?-i:([A-Z][a-z][\w'-]*))\s*[!,.]", re.IGNORECASE)


def couple_answered(question: str, asker: str, answer: str, answerer: str) -> list[LineState]:
    """An engagement (``partner_of``), a marriage (``married_to``) or a separation (ended: ``married_to`` when its
    sentence speaks of divorce, else ``partner_of``) that ``answer`` tells of "we" or "he/she", with the name the
    answer opens with, else the one person the question asks after (:func:`asked_person`); each with its clause's
    time words.

    >>> [(s.relation, s.name) for s in couple_answered("And the tall girl?", "Dilnoza", "Femke! We got engaged in February.", "Rustam")]
    [('partner_of', 'Femke')]
    >>> [(s.relation, s.name, s.ended) for s in couple_answered("How are you? After everything with Hendra.", "Putri",
    ...     "Better. We separated in 2019 and the divorce was final in February last year.", "Dewi")]
    [('married_to', 'Hendra', True)]
    """
    name = asked_person(question, asker, answerer) or _one_name(question, (asker, answerer))
    if name is None:
        opening = _OPENING_NAME.match(answer)
        name = opening.group(1) if opening is not None else None
        if name is None or name.lower() in _NOT_A_NAME or _not_a_subject_name(name) or name in _QUESTION_WORDS \
                or name in (asker, answerer):
            return []
    out = _said_in(answer, _GOT_ENGAGED, "partner_of", name) + _said_in(answer, _GOT_MARRIED, "married_to", name)
    for st in _said_in(answer, _SEPARATED, "partner_of", name):
        rel = "married_to" if _DIVORCED.search(st.sentence) else "partner_of"
        out.append(LineState(rel, name, st.sentence, True, clause=_clause_after(st.clause, 0)))
    return out


#: a sentence that opens with a name and its verb ("Esteban must be so proud"), unlike "After everything …"
_NAME_THEN_VERB = re.compile(r"[A-Z][a-z][\w-]* (?:must|is|was|has|had|will|would|should|can|could|said|says|seems)\b")


def _one_name(line: str, speakers: tuple[str, ...]) -> str | None:
    """The one name a line holds past the first word of its sentences ("How are you? After everything with
    Hendra." → "Hendra"), not a speaker's; ``None`` for none or several."""
    names = {m.group(1) for sentence in re.split(r"(?<=[.!?])\s+", line.strip())
             for m in _Q_NAME.finditer(sentence, 0 if _NAME_THEN_VERB.match(sentence) else 1)
             if m.group(1) not in speakers and m.group(1) not in _QUESTION_WORDS and m.group(1) not in _TIME_NAMES
             and m.group(1).lower() not in _NOT_A_NAME and not _not_a_subject_name(m.group(1))}
    return names.pop() if len(names) == 1 else None


#: "Still at Glovo?", "Are you still with BMW?": the listener's job asked after
_ASKED_STILL_AT = re.compile(r"(?:^|[.!?,]\s*|\bare you\s+|\byou(?:'re| are)\s+)still (?:at|with|working (?:at|for)) "
                             rf"(?-i:{_NAME})[^.!?]*\?", re.IGNORECASE)  # the name keeps its case: not "her place"
_NO = re.compile(r"\s*(?:no|nope|not anymore|not any more)\b(?![^.!?]*\bstill\b)", re.IGNORECASE)


#: session 30: "Still at that consultancy in Dublin?" — "Yep, Tidewell Consulting.": the job asked after by what
#: it is, named by the answer
_ASKED_STILL_AT_ONE = re.compile(r"\bstill (?:at|with|working (?:at|for)) (?:that|the|your) [a-z]", re.IGNORECASE)
_YES_NAME = re.compile(rf"^\s*(?:yes|yep|yeah|yup)\W+(?-i:{_NAME})\s*[.!,]", re.IGNORECASE)


#: session 33: the listener's work asked after ("so where r u working now", "and the job?", "u started somewhere
#: new right?", "where do you work these days?")
_ASKED_JOB = re.compile(r"\bwhere (?:are|r) (?:you|u) working\b|\bwhere do (?:you|u) work\b|"
                        r"\bwhere(?:'s| is) (?:your|ur) (?:new )?job\b|\b(?:the|your|ur) (?:new )?job\s*\?|"
                        r"\bstarted somewhere new\b|\bwho (?:are|r) (?:you|u) working for\b", re.IGNORECASE)
#: an answer that opens with the name ("Coastline Logistics, im an operations analyst", "yep Pelagic Robotics
#: since january")
_NAME_OPENS = re.compile(rf"^\s*(?:(?:yes|yep|yeah|yup|ya)\W+)?(?-i:{_NAME})(?=\s*(?:[.!,;:(]|[-–—]|since\b|now\b|$))",
                         re.IGNORECASE)


def job_named(question: str, answer: str) -> LineState | None:
    """"Still at that consultancy in Dublin?" answered "Yep, Tidewell Consulting." → the answerer ``works_at``
    Tidewell Consulting; so is "where r u working now" answered "Coastline Logistics, im an operations
    analyst" (session 33: a name of two words or more, which a town's seldom is); ``None`` for any other pair.

    >>> job_named("Still at that consultancy in Dublin?", "Yep, Tidewell Consulting. Nearly three years.").name
    'Tidewell Consulting'
    >>> job_named("so where r u working now", "Coastline Logistics, im an operations analyst.").name
    'Coastline Logistics'
    >>> job_named("so where r u working now", "Berlin, at a startup.") is None
    True
    """
    m = _YES_NAME.match(answer)
    if _ASKED_STILL_AT_ONE.search(question) is not None and m is not None and not _not_a_subject_name(m.group(1)):
        return LineState("works_at", m.group(1), answer[:m.end()].strip())
    m = _NAME_OPENS.match(answer)
    if _ASKED_JOB.search(question) is None or m is None or " " not in m.group(1) or _not_a_subject_name(m.group(1)):
        return None
    return LineState("works_at", m.group(1), answer[:m.end()].strip())


def job_answered(question: str, answer: str, who: str = "") -> LineState | None:
    """"Still at Glovo?" answered "No, the layoffs got me in March last year." → ``works_at`` Glovo ended
    (the answer's first sentence gives the time); ``None`` for any other answer.  ``who``: the person the
    question asks after (:func:`asked_person`: "What about Emeka, still at LUTH?"), else the answerer."""
    q = _ASKED_STILL_AT.search(question)
    if q is None or _NO.match(answer) is None or _not_a_subject_name(q.group(1)):
        return None
    first = re.split(r"(?<=[.!?])\s+", answer.strip())[0]
    return LineState("works_at", _bare_name(q), first, True, who=who, clause=first)


__all__ = ["asked_person", "couple_answered", "home_answered", "job_answered", "job_named", "kin_answered", "moved_here",
           "told_states"]
