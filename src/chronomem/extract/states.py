"""State rules (rules 13 and 14): what a statement says about a state changing, read in code.

The evolving-state benchmark (``benchmarks/bench_evolving.py``: moves, job changes, a past told
late, relations asked from the other side) showed the one-slot-per-line extractor losing the
changes a memory exists to notice, in ways the statement's own words settle:

* **an interval told late**: "worked at a bakery in York from 2014 to 2016" kept only "from
  2014" (:func:`range_phrase` finds the whole range, so the fact ends in 2016);
* **an ending that governs another object**: "quit La Paz and now works at Hospital Clinico"
  typed ``works_at Hospital Clinico`` with ``ended``, and "moved to Lisbon last year and closed
  her cafe" ended the residence (:func:`ending_governs`: the ending word must reach the object
  in its own clause);
* **an employer typed as a school**: "joined Novartis as a lab scientist", "is head chef at Quintal
  Verde", "teaches maths at Hanoi-Amsterdam High School" → ``studies_at`` (:func:`employer_named`);
* **a second clause**: "broke up … and moved to Tokyo", "left Sony … and is freelancing", "told Omar
  that Felix moved to Oslo" (:func:`state_clauses`, with the clause's own subject:
  :func:`clause_subject`); a state reported of someone else ("telling Priya about Carmen's living
  situation in Seville", "telling Sipho about Lwazi … getting a job at Standard Bank",
  :func:`reported_owner`);
* **what the slot left out of its line**: "I'm sharing an apartment in Osaka", "I'm a developer at
  Avast", "Petra and I got married", "Erik and I split up" (:func:`line_states`);
* **whose state a line tells** (session 28): "Katerina got the job at the big pharmacy in Patras" and
  "I'm dating Zainab, she's a doctor at …" were typed as the speaker's job, which closed the speaker's
  own (:func:`line_owner`: the subject of the object's clause decides);
* **jobs and homes said other ways** (session 28): "I got a developer job at Credit Suisse", "moved
  to Tokyo for a job at Sony", "Intel offered me a job", "I teach nursing at Trinity College", "Now
  I'm at Allegro, working on …", "I'm back in Johannesburg", "We've been in Helsinki since 2021",
  "Arup hired me", "final year of English at Hanoi University", "a master's in … at …", "Still in
  Athens?" answered yes (:func:`.replies.home_answered`); and seasons in a range ("from autumn 2009 to spring
  2010") and in a line's time words ("in spring 2016");
* **family named in passing**: "my daughter Lucia", "your brother Felix", "my wife Giulia", or "And
  your sister?" answered "Carmen is …" — the model typed the daughter a pet, or wrote nothing
  (:func:`kin_mentions`, :func:`.replies.kin_answered`);
* **what an answer tells with its question** (sessions 28–30): :mod:`.replies`.

All functions are pure.  :func:`~chronomem.extract.observations.postprocess_observations`
applies them under :data:`~chronomem.extract.observations.STATE_RULES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from .. import timeexpr

_MONTH = rf"(?:{timeexpr.MONTH_ALTERNATION})"
#: a month or a season ("from autumn 2009 to spring 2010": session 28)
_MONTH_OR_SEASON = rf"(?:{timeexpr.MONTH_ALTERNATION}|{timeexpr.SEASON_ALTERNATION})"
_WHEN = rf"(?:(?:early|late|mid) )?(?:{_MONTH_OR_SEASON}(?: of)? )?(?:19|20)\d\d|{_MONTH_OR_SEASON}"
_RANGE = re.compile(
    rf"\b(?:(?:from|between) (?:the )?(?:{_WHEN}) (?:to|until|till|through|and|-|–) (?:the )?(?:{_WHEN})|"
    rf"(?:{_WHEN}) ?(?:-|–) ?(?:{_WHEN})|(?:until|till|up to) (?:{_WHEN})|"
    rf"(?:{_MONTH_OR_SEASON} )?(?:19|20)\d\d (?:to|until|till|through) (?:{_MONTH_OR_SEASON} )?(?:19|20)\d\d|"
    r"in (?:19|20)\d\d and (?:19|20)\d\d)\b",  # session 29: "in 2006 and 2007", read as "between 2006 and 2007"
    re.IGNORECASE)


def range_phrase(text: str) -> str:
    """The first interval or "until" in ``text`` that :mod:`~chronomem.timeexpr` resolves as one
    ("from 2014 to 2016", "between May and July 2022", "until 2015"), else ``""``.

    >>> range_phrase("Lena worked at a bakery in York from 2014 to 2016.")
    'from 2014 to 2016'
    >>> range_phrase("Sofie spent 2012 to 2014 at the Rijksmuseum.")
    '2012 to 2014'
    >>> range_phrase("Aga worked at Pixel Wolf from autumn 2009 to spring 2010.")
    'from autumn 2009 to spring 2010'
    >>> range_phrase("Before uni, in 2006 and 2007, I lived in Dublin.")
    'between 2006 and 2007'
    >>> range_phrase("Lena moved to Leeds in March.")
    ''
    """
    ref = datetime(2000, 1, 1, tzinfo=timezone.utc)
    for m in _RANGE.finditer(text):
        phrase = m.group(0)
        if phrase[:3].lower() == "in ":  # "in 2006 and 2007": both years
            phrase = "between " + phrase[3:]
        r = timeexpr.resolve(phrase, ref)
        if r is not None and r.kind in ("range", "until"):
            return phrase
    return ""


_ENDING = re.compile(
    r"\b(?:lost|quit|quitting|left|leaving|moved (?:away|out)(?: of| from)?|broke up|break up|split up|divorc\w*|"
    r"sold|no longer|stopped|ended|closed|shut down|gave up|retired|resigned|laid off|fired|dropped out|"
    r"passed away|died|rehomed|re-?hom(?:e|es|ing)|got rid of|gave away|used to|former(?:ly)?|anymore)\b",
    re.IGNORECASE)
#: Where a clause ends and another begins: punctuation, "but", or "and" before a new verb
#: ("and now works", "and joined", "and closed") — not "Kenji and I broke up".
_CLAUSE_BREAK = re.compile(r"[,;.!?]|\b(?:but|because|since|after|before|when|while|although|though|so that|until)\b|"
                           r"\band (?:now|then|also|later|since)\b|\band (?:\w+ )?\w+(?:ed|s)\b|"
                           r"\b(?:he|she|they|we|i)\b", re.IGNORECASE)
#: "Kenji and I broke up": a second subject joined to the object is the same clause
_JOINT_SUBJECT = re.compile(r"^\s*(?:and|&) (?:I|me|we|he|she|they|[A-Z][a-z]+)\s*$")


#: endings that close a state whatever the model said ("Aiko and Kenji broke up" typed not ended)
_STRONG_ENDING = re.compile(r"\b(?:quit|left|broke up|split up|divorced|resigned(?: from)?|(?:was |got )?laid off(?: from)?|"
                            r"(?:was |got )?fired(?: from)?|moved (?:away|out)(?: of| from)?|no longer)\b", re.IGNORECASE)


def ending_governs(statement: str, obj: str, *, strong: bool = False) -> bool:
    """Does an ending word of ``statement`` reach ``obj`` within one clause?  "Diego quit La Paz"
    ends La Paz; "quit La Paz and now works at Hospital Clinico" does not end the clinic; "moved to
    Lisbon last year and closed her cafe" does not end Lisbon; "Kenji and I broke up" ends Kenji.
    When the object is not in the statement, any ending word counts (the caller's old reading).
    ``strong``: only the endings that close a state whatever the model said (quit, left, broke up,
    divorced, laid off …), and never without the object in the statement.

    >>> ending_governs("Diego quit La Paz and now works at Hospital Clinico.", "Hospital Clinico")
    False
    >>> ending_governs("Kenji and I broke up in the spring.", "Kenji")
    True
    """
    ending = _STRONG_ENDING if strong else _ENDING
    at = statement.lower().find(obj.lower().strip()) if obj.strip() else -1
    if at < 0:
        return not strong and bool(ending.search(statement))
    end = at + len(obj.strip())
    for m in ending.finditer(statement):
        if m.start() < end and m.end() > at:
            return True  # "ex-boyfriend" inside the object
        if m.end() <= at:  # "quit La Paz": the ending, then the object
            between = statement[m.end():at]
            reaches = not _CLAUSE_BREAK.search(between)
        else:  # "Kenji and I broke up": the object, then the ending ("and closed her cafe" is another clause)
            between = statement[end:m.start()]
            reaches = bool(_JOINT_SUBJECT.match(between)) or not _CLAUSE_BREAK.search(statement[end:m.end()])
        if reaches and len(between.split()) <= 8:
            return True
    return False


#: a capitalised name of up to four words; "I" ("Next time I'm in Prague I'll bring …") never continues one
_NAME = (r"(?:the )?((?:(?:St|Mt|Ft)\. )?[A-Z][\w'&-]*(?: (?:of |de |la |do |da |dos |das |di |del |della |du |von |van )?"
         r"(?!I\b)[A-Z][\w'&-]*){0,3})")
#: a clause of its own that moves someone or ends a named state; the relation of a "left X" clause is
#: the one the model typed the statement with (left Sony: works_at; left Madrid: lives_in)
_MOVED = re.compile(rf"\b(?:moved|moving|relocated|relocating) (?:back )?to {_NAME}")
_LEFT = re.compile(rf"\b(?:left|quit|resigned from|(?:was |got )?laid off from|moved (?:away|out) (?:of|from)) {_NAME}")
_JOINED = re.compile(rf"\bjoin(?:ed|s|ing)? {_NAME}(?: [a-z]+){{0,2}} as (?:an? |the )?\w+")
#: a clause after any of these is no plain statement of fact ("might move to Paris")
_NOT_PLAIN = re.compile(r"\b(?:no longer|not|n't|never|might|may|could|would|will|wants? to|plans? to|planning to|"
                        r"hopes? to|thinking of|considering|[Ii]f|wish\w*|going to|about to|dream\w*|[Nn]ext time|[Ww]henever|"
                        r"[Ee]very time)\b")
_LEFT_RELATIONS = frozenset({"works_at", "lives_in", "moved_to", "studies_at"})


_ADVERBS = {"just", "recently", "finally", "also", "has", "had", "have", "then", "already", "eventually"}
_THIRD_PERSON = {"he", "she", "they", "him", "her", "them", "it"}


def clause_subject(statement: str, start: int) -> str | None:
    """Who does the clause at ``start`` speak of?  The name just before its verb ("Felix moved to
    Oslo" → ``"Felix"``), ``""`` for the statement's own subject ("… and moved to Tokyo", "I moved"),
    ``None`` when a pronoun leaves it open ("he moved to Oslo")."""
    words = re.findall(r"[A-Za-z']+", statement[:start])
    while words and words[-1].lower() in _ADVERBS:
        words.pop()
    if not words:
        return ""
    last = words[-1]
    if last.lower() == "and":  # "Olga's dad Anders retired and moved to Gotland": the relative's clause goes on
        kin = list(_KIN_NAMED.finditer(statement[:start]))
        if kin:
            return kin[-1].group(1)
    if last.lower() in _THIRD_PERSON:
        return None
    if last[0].isupper() and last.lower() not in ("i", "we"):
        return last
    return ""


def state_clauses(statement: str, relation: str, obj: str) -> list[tuple[str, str, bool, str]]:
    """``(relation, object, ended, subject)`` of the states a statement changes besides the one the
    model typed (``relation`` / ``obj``): "moved to Tokyo" → ``lives_in Tokyo``; "left Sony" in a
    statement typed ``works_at`` → ``works_at Sony``, ended; "joined Novartis as a lab scientist" →
    ``works_at Novartis``.  Not after a hedge, plan or negation.  ``subject``: ``""`` for the
    statement's own, or the name the clause speaks of ("Lena told Omar that Felix moved to Oslo");
    a clause whose subject is a pronoun is left out.

    >>> state_clauses("Aiko and Kenji broke up in the spring and moved to Tokyo in May.", "married_to", "Kenji")
    [('lives_in', 'Tokyo', False, '')]
    >>> state_clauses("Lena told Omar that Felix moved to Oslo last month.", "friend_of", "Felix")
    [('lives_in', 'Oslo', False, 'Felix')]
    """
    out: list[tuple[str, str, bool, str]] = []

    def add(rel: str, name: str, ended: bool, start: int) -> None:
        who = clause_subject(statement, start)
        same = name.lower() in obj.lower() or obj.lower() in name.lower()
        if who is None or _NOT_PLAIN.search(statement[:start]) or same:
            return
        if (rel, name, ended, who) not in out:
            out.append((rel, name, ended, who))

    for m in _MOVED.finditer(statement):
        add("lives_in", m.group(1), False, m.start())
    if relation in _LEFT_RELATIONS:
        left_as = {"moved_to": "lives_in", "studies_at": "studies_at" if _STUDY.search(statement) else "works_at"}
        for m in _LEFT.finditer(statement):
            add(left_as.get(relation, relation), m.group(1), True, m.start())
    for m in _JOINED.finditer(statement):
        if not _STUDY.search(statement):
            add("works_at", m.group(1), False, m.start())
    return out


_ADV = r"(?:(?:now|still|currently|just|recently|finally|also|already|actually) )*"
#: role nouns: what a role named before where it is held ends in, without "as" ("is head chef at Quintal
#: Verde", "a nurse at the University Hospital") — not any word ending in -er ("better at Tennis")
_ROLE_NOUN = (r"chef|nurse|pilot|captain|cook|manager|engineer|designer|developer|analyst|teacher|doctor|scientist|"
              r"journalist|lawyer|architect|consultant|curator|lecturer|professor|instructor|director|editor|"
              r"researcher|accountant|surgeon|dentist|officer|assistant")
#: the head of a job title after "as" ("a UX designer", "head chef", "a captain"): after "as" any agent noun
_ROLE = rf"[a-z]+(?:er|or|ist|ian|ant|ent)|intern|lead|head|{_ROLE_NOUN}"
#: "as a nurse at St James's", "as a senior engineer with Arup": a role, then where it is held
_AS_ROLE_AT = rf"as (?:an? |the )?(?:[a-z]+ ){{0,2}}(?:{_ROLE}) (?:at|for|with) {_NAME}"

_EMPLOYER = (
    _JOINED,
    # fifth cut: teaching somewhere, and a role held there ("teaches maths at Hanoi-Amsterdam High School")
    re.compile(rf"\b(?:teach(?:es|ing)?|taught|lectur(?:es|ed|ing)) (?:[a-z]+ ){{0,2}}(?:at|for) {_NAME}"),
    re.compile(rf"\b(?:(?:an?|the) )?(?:[a-z]+ ){{0,2}}(?:{_ROLE_NOUN}) (?:at|for|with) {_NAME}"),
    re.compile(rf"\b(?:works?|worked|working) (?:at|for) {_NAME}"),
    re.compile(rf"\b(?:job|position|role|internship) (?:at|with) {_NAME}"),
    re.compile(rf"\b(?:hired by|employed by|started (?:a new job )?at) {_NAME}"),
    re.compile(rf"\bstart(?:s|ed|ing)? (?:work |a new job )?{_AS_ROLE_AT}"),
)
_STUDY = re.compile(r"\b(?:stud(?:y|ies|ied|ying)|students?|enrol\w*|school|college|universit\w*|degree|course|class)\b",
                    re.IGNORECASE)


def employer_named(statement: str, obj: str) -> bool:
    """Does ``statement`` name ``obj`` as an employer ("joined Novartis as a lab scientist",
    "works at Acme", "a job at Globex", "teaches maths at Hanoi-Amsterdam High School") and say nothing
    of studying outside the employer's own name ("the University Hospital" is a hospital)?"""
    low = obj.lower().strip()
    if _STUDY.search(re.sub(re.escape(obj.strip()), " ", statement, flags=re.IGNORECASE) if low else statement):
        return False
    return any(low and (low in m.group(1).lower() or m.group(1).lower() in low)
               for rx in _EMPLOYER for m in rx.finditer(statement))


_ENGAGED = re.compile(r"\b(?:engaged|fianc[eé]e?|proposed)\b", re.IGNORECASE)
_WED = re.compile(r"\b(?:married|marry|wedding|wed|husband|wife|spouse)\b", re.IGNORECASE)


def engaged_only(statement: str) -> bool:
    """Does ``statement`` speak of an engagement and of no marriage ("Sofie is engaged to Lars")?
    The 1.5B model types it ``married_to``; an engaged couple are partners.

    >>> engaged_only("Sofie is engaged to Lars, they met at a climbing gym."), engaged_only("Noor is engaged and getting married next summer.")
    (True, False)
    """
    return _ENGAGED.search(statement) is not None and _WED.search(statement) is None


#: kin word → the relation from the speaker's side ("my daughter Lucia": speaker parent_of Lucia)
KIN: dict[str, str] = {
    **dict.fromkeys(("daughter", "son", "child", "kid", "baby", "stepdaughter", "stepson"), "parent_of"),
    **dict.fromkeys(("brother", "sister", "sibling", "twin", "stepbrother", "stepsister"), "sibling_of"),
    **dict.fromkeys(("wife", "husband", "spouse"), "married_to"),
    **dict.fromkeys(("boyfriend", "girlfriend", "partner", "fiance", "fiancé", "fiancee", "fiancée"), "partner_of"),
    **dict.fromkeys(("mom", "mum", "mother", "dad", "father", "mama", "papa"), "child_of"),
    **dict.fromkeys(("friend", "best friend", "bff"), "friend_of"),
}
_KIN_WORDS = "|".join(sorted((re.escape(k) for k in KIN), key=len, reverse=True))
_KIN = re.compile(rf"\b(my|your|our)\s+(?:(?:little|big|older|younger|baby|eldest|youngest|new|dear|twin|half)[\s-]+)*"
                  rf"({_KIN_WORDS})s?,?\s+"
                  r"(?-i:([A-Z][a-z][\w'-]*))(?!\s*'s)", re.IGNORECASE)
#: "dad Anders", "sister Carmen" inside a statement
_KIN_NAMED = re.compile(rf"\b(?:{_KIN_WORDS})s?,?\s+(?-i:([A-Z][a-z][\w'-]*))", re.IGNORECASE)
_NOT_NAMES = frozenset("""I I'm I've Is Was Are The And But So Who What When Where How Just Now Too Also Said Says
    Has Had Have Will Would Can Could Did Does""".split())


@dataclass(frozen=True, slots=True)
class KinMention:
    """"my daughter Lucia" in a line: ``holder`` (the speaker, or the listener for "your")
    ``relation`` ``name``; ``word`` is the kin word as said."""

    holder: str
    relation: str
    name: str
    word: str

    def statement(self) -> str:
        return f"{self.name} is {self.holder}'s {self.word}."


def kin_mentions(text: str, speaker: str, listener: str | None) -> list[KinMention]:
    """Family and friends named in a line: "my daughter Lucia" (the speaker's), "your brother Felix"
    (the listener's, when the conversation has one other speaker).  "our" counts as the speaker's.
    A name that is a speaker's is left out ("my friend Omar" said to Omar is talk, not news).

    >>> kin_mentions("Yes! And my daughter Lucia was born in October!", "Diego", "Priya")
    [KinMention(holder='Diego', relation='parent_of', name='Lucia', word='daughter')]
    """
    out: list[KinMention] = []
    for m in _KIN.finditer(text):
        whose, word, name = m.group(1).lower(), m.group(2).lower(), m.group(3)
        holder = listener if whose == "your" else speaker
        if holder is None or name in _NOT_NAMES or name in (speaker, listener):
            continue
        mention = KinMention(holder, KIN[word], name, word)
        if mention not in out:
            out.append(mention)
    return out


#: what names a job ("a developer job", "a lecturer post")
_A_JOB = r"(?:job|position|post|role|contract|spot)"
#: an offer turned down is no job
_NOT_DECLINED = r"(?![^.!?]*\b(?:turned (?:it |them )?down|declined|refused|rejected|said no)\b)"
#: first-person clauses of a line that state where the speaker lives or works, with a name
_LINE_STATES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"\b(?:I|[Ww]e)(?:'m| am|'re| are)? {_ADV}(?:live|living) in {_NAME}"), "lives_in"),
    (re.compile(rf"\b(?:I|[Ww]e)(?:'ve| have)? {_ADV}(?:moved|relocated) (?:back )?to {_NAME}"), "lives_in"),
    (re.compile(rf"\b(?:I|[Ww]e)(?:'m| am|'re| are|'ve| have)? {_ADV}(?:sharing |renting |bought |moved into |in )?"
                rf"(?:an? |my |our )?(?:new |small |little )?(?:apartment|flat|house|home|place) in {_NAME}"), "lives_in"),
    (re.compile(rf"\bI(?:'m| am) {_ADV}(?:based |living |settled |back )?in {_NAME}\b(?!,? for\b)"), "lives_in"),
    (re.compile(rf"\b[Ww]e(?:'re| are) {_ADV}(?:based |living |settled |back )in {_NAME}\b(?!,? for\b)"), "lives_in"),
    (re.compile(rf"\bI(?:'m| am)? {_ADV}(?:work|working) (?:at|for) {_NAME}"), "works_at"),
    (re.compile(rf"\bI(?:'ve| have)? {_ADV}(?:started|joined) (?:at )?{_NAME} as\b"), "works_at"),
    (re.compile(rf"\bI {_ADV}started (?:a new job |work )?at {_NAME}"), "works_at"),
    (re.compile(rf"\bI {_ADV}start(?:ed)? (?:work |a new job )?{_AS_ROLE_AT}"), "works_at"),
    (re.compile(rf"\bI(?:'m| am) [^.!?,]*, based in {_NAME}"), "lives_in"),
    (re.compile(rf"\bI\b(?:'ve| have)?(?: {_ADV}|[^.!?]*? and ){_ADV}joined {_NAME}(?: [a-z]+){{0,2}} as\b"), "works_at"),
    (re.compile(rf"\b(?:I|[Ww]e)(?:'ve| have) {_ADV}(?:been )?(?:lived|living) in {_NAME}\b(?=[^.!?]*\b(?:since|for)\b)"),
     "lives_in"),
    (re.compile(rf"\bin {_NAME},? where (?:I|we) {_ADV}live\b"), "lives_in"),
    (re.compile(rf"\bI(?:'m| am) {_ADV}(?:with|at) {_NAME},? (?:now|these days|since)\b"), "works_at"),
    (re.compile(rf"\bI(?:'m| am) {_ADV}(?:an? |the )?(?:[a-z]+ ){{0,2}}(?:{_ROLE}) (?:at|for|with) {_NAME}"), "works_at"),
    # session 28: a job got, a job moved for, a job offered, teaching ("I got a developer job at Credit Suisse",
    # "I moved to Tokyo last year for a job at Sony", "Intel offered me a job", "I teach nursing at Trinity College")
    (re.compile(rf"\bI(?:'ve| have)? {_ADV}(?:got|landed|took|found|accepted|started) (?:an? |the |my )?(?:new )?"
                rf"(?:[a-z]+ ){{0,2}}{_A_JOB} (?:at|with) {_NAME}"), "works_at"),
    (re.compile(rf"\b(?:I|[Ww]e)\b[^.!?]*? for (?:an? |the |my )(?:new )?(?:[a-z]+ ){{0,2}}{_A_JOB} (?:at|with) {_NAME}"),
     "works_at"),
    (re.compile(rf"{_NAME} {_ADV}(?:offered|gave) me (?:an? |the )(?:[a-z]+ ){{0,2}}{_A_JOB}\b{_NOT_DECLINED}"), "works_at"),
    (re.compile(rf"\bI {_ADV}(?:teach|lecture)(?: [a-z]+){{0,2}} (?:at|for) {_NAME}"), "works_at"),
    (re.compile(rf"\b(?:I|[Ww]e) {_ADV}moved (?:back )?to [A-Z][\w'-]*(?: [A-Z][\w'-]*)* to (?:teach|lecture|work)"
                rf"(?: [a-z]+){{0,2}} (?:at|for) {_NAME}"), "works_at"),
    # "We've been in Helsinki since May 2021", "Tabanlioglu Architects took me on", "when Arup hired me"
    (re.compile(rf"\b(?:I|[Ww]e)(?:'ve| have) {_ADV}been (?:living |based )?in {_NAME}\b(?=[^.!?]*\b(?:since|for "
                r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|many|\d+) (?:years?|months?))\b)"),
     "lives_in"),
    (re.compile(rf"{_NAME} {_ADV}(?:(?:hired|recruited|employed) me|took me on)\b"), "works_at"),
)
#: "I switched to Kakao in October, same role", "Now I'm at Allegro, working on their search": an
#: employer only with a word of work in the line
_SWITCHED = re.compile(rf"\bI {_ADV}(?:switched|changed) (?:jobs |companies )?to {_NAME}|"
                       rf"\b(?:[Nn]ow|[Tt]hese days),? I(?:'m| am) {_ADV}(?:at|with) {_NAME}|"
                       rf"\bwhen I {_ADV}joined {_NAME}|\bI {_ADV}jumped (?:ship )?to {_NAME}")  # session 29: "since we moved here in spring 2018, when I joined Zalando"
_WORK_CUE = re.compile(r"\b(?:job|jobs|role|position|company|employer|work|working|team|office|hired|colleagues?)\b",
                       re.IGNORECASE)
#: "I'm not at Central anymore", "I no longer work for Acme": the speaker's employer ended
_NOT_AT = re.compile(rf"\bI(?:'m| am)? (?:not|no longer) (?:at|with|working (?:at|for)|work(?:ing)? (?:at|for)) "
                     rf"{_NAME}\b(?=[^.!?]*\b(?:anymore|any more)\b)|\bI {_ADV}no longer (?:work|am) (?:at|for|with) {_NAME}")
#: a partnership begun or ended in the speaker's own words ("Petra and I got married", "Erik and I split up")
_COUPLE = r"(?:(?-i:([A-Z][a-z][\w'-]*)) and I|I and (?-i:([A-Z][a-z][\w'-]*)))"
_PAIRS: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(rf"\b{_COUPLE} (?:just |finally |recently )?(?:got|are|were|have been) married\b", re.IGNORECASE),
     "married_to", False),
    (re.compile(rf"\b{_COUPLE} (?:just |finally |recently )?(?:got|are|were) engaged\b", re.IGNORECASE),
     "partner_of", False),
    (re.compile(rf"\b{_COUPLE} (?:just |finally |recently )?(?:broke up|split up|separated)\b", re.IGNORECASE),
     "partner_of", True),
    (re.compile(rf"\b{_COUPLE} (?:just |finally |recently )?(?:got )?divorced\b", re.IGNORECASE), "married_to", True),
    (re.compile(r"\bI (?:just |finally |recently )?(?:got )?married (?:to )?(?-i:([A-Z][a-z][\w'-]*))()", re.IGNORECASE),
     "married_to", False),
    (re.compile(r"\bI(?:'m| am)? (?:just |finally |recently |now )?(?:got )?engaged to (?-i:([A-Z][a-z][\w'-]*))()",
                re.IGNORECASE), "partner_of", False),
    # session 33: "Her name is Clara; we have been together for a little over a year"
    (re.compile(r"\b(?:her|his) name is (?-i:([A-Z][a-z][\w'-]*))\s*(?:[;,:—–-]\s*|and )(?:and )?we(?:'ve| have)? "
                r"(?:been )?(?:together|dating|seeing each other|a couple)\b()", re.IGNORECASE), "partner_of", False),
)


#: holidays and other capitalised times that follow "at" ("At Christmas I quit my job")
_TIME_NAMES = frozenset("""Christmas Easter Thanksgiving Halloween Ramadan Diwali Eid Hanukkah Passover
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday""".split()) | frozenset(
    m.capitalize() for m in timeexpr.MONTH_ALTERNATION.split("|"))
#: session 28: a place of work or study the speaker is at, its kind read from the line ("I'm back at Dokuz Eylul
#: for my third year of architecture", "Still at the BBC.", "Back at El Informador, covering city hall again")
_AT_PLACE = (
    re.compile(rf"\bI(?:'m| am) {_ADV}back at {_NAME}"),
    re.compile(rf"^\s*(?:(?:yes|yeah|yep)[,!.]?\s+)?(?:[Ss]till|[Bb]ack|[Nn]ow back) at {_NAME}"),
)
#: a year of studies ("for my third year of architecture")
_STUDY_YEAR = re.compile(r"\b(?:first|second|third|fourth|fifth|final) year\b|\b(?:master'?s|bachelor'?s|PhD|thesis|semester)\b",
                         re.IGNORECASE)
#: a year of a course or a degree, and where ("Final year of English at Hanoi University", "started a master's
#: in oenology at Aristotle University", "My third year of civil engineering at KNUST starts next week")
_STUDIES = re.compile(
    rf"\b(?:(?i:first|second|third|fourth|fifth|final|last) year of|(?i:an? |my |the )?(?:master'?s|bachelor'?s|PhD|"
    rf"doctorate|MBA|MSc|MA|BA|BSc|degree|diploma)(?: (?:in|of))?)(?: [\w'-]+){{0,4}}? at {_NAME}")


#: session 30: a year or a term at a school, or its exams ("Second year at the Politecnico di Milano is all
#: models", "First term at the Sibelius Academy", "It's midterms at the American University in Cairo"): a
#: school only when its name says so ("my first year at Google" is a job)
_TERM_AT = re.compile(rf"\b(?i:(?:first|second|third|fourth|fifth|final) (?:year|term|semester)|midterms?|exams?) "
                      rf"at {_NAME}")
_SCHOOL_NAME = re.compile(r"\b(?:Universit\w*|Academy|Akademie|Politecnico|Polytechnic|College|School|Institute|"
                          r"Conservato\w*)\b|^(?:TU|ETH|EPFL|MIT|UCL|LSE|NYU|UCLA)\b")
#: session 30: a business of one's own and its name, in the same sentence or the next ("So in January I opened
#: my own studio. Studio Ardesia.", "I started my own thing online, Jousi Studio, cello lessons"); session 33:
#: after another verb ("I left Aecon and opened my own firm, Meskel Bridge Consulting", "I used the time to
#: start my own thing — an online shop for cashmere called Steppe Thread")
_OWN_BUSINESS = re.compile(
    rf"\b(?:I|[Ww]e)\b(?: {_ADV}| [^.!?]{{0,40}}? (?:and |to ))(?:opened|started|founded|launched|registered|set up|"
    r"open|start|found|launch|register) (?:my|our) own "
    r"(?:[a-z]+ )?(?:studio|company|business|firm|practice|shop|agency|startup|start-up|label|thing|clinic|"
    rf"restaurant|bakery|caf[eé])(?: [a-z]+)?(?:[:,.!]| [-–—])\s+(?:[^.!?]{{0,60}}? (?:called|named) )?{_NAME}")
#: session 30: a business set up by name ("a former colleague and I have set up Sankofa Structures here")
_SET_UP = re.compile(rf"\b(?:I|[Ww]e)(?:'ve| have)? {_ADV}(?:set up|founded|co-founded|launched|registered) {_NAME}")
#: session 30: "Guess who's back in Accra for good?" (a question that tells)
_GUESS_WHO = re.compile(rf"\b[Gg]uess who(?:'s| is) {_ADV}(?:back |living |based )?in {_NAME}")
#: session 33: a question that tells ("Funny story: did I ever tell you I spent all of 2008 in Vancouver?",
#: "Have I told you that I worked at Nokia?"): what follows it is read as said
_TELLING_ASKED = re.compile(r"\b(?:[Dd]id|[Hh]ave|[Hh]ad) I (?:ever |already )?(?:tell|told|mention|mentioned) you"
                            r"(?: (?:about )?(?:that|how))? (?=I\b)")
#: session 30: a business sold ("I sold Brasa in 2020"), so no longer one's work
_SOLD = re.compile(rf"\bI {_ADV}sold {_NAME}")
#: session 30: a job that starts on a near date ("I start at Tokopedia next Monday")
_STARTS_AT = re.compile(rf"\bI {_ADV}(?:start|begin) (?:work )?(?:at|with) {_NAME}(?= (?:next|on|this|tomorrow|in)\b)")


@dataclass(frozen=True, slots=True)
class LineState:
    """"I live in Leeds" in a line: the speaker ``relation`` ``name``; ``sentence`` is where it is
    said; ``ended``: the line ends it ("Erik and I split up")."""

    relation: str
    name: str
    sentence: str
    ended: bool = False
    #: session 29: whose state it is when not the speaker's ("She moved to Miami", answering "And how is
    #: Martina?"); the time phrase the line gives it ("between 2006 and 2007", "for three years now") when
    #: the sentence's first one is not it; the clause it is said in (its own time words come first)
    who: str = ""
    time: str = ""
    clause: str = ""

    def statement(self, speaker: str) -> str:
        speaker = self.who or speaker
        if self.ended and self.relation == "works_at":
            return f"{speaker} no longer works at {self.name}."
        if self.ended and self.relation == "lives_in":
            return f"{speaker} no longer lives in {self.name}."
        if self.ended:
            verb = "divorced" if self.relation == "married_to" else "broke up"
            return f"{speaker} and {self.name} {verb}."
        if self.time.lower().startswith(("between ", "from ")) or " to " in self.time:
            verb = {"lives_in": "lived in", "works_at": "worked at", "studies_at": "studied at"}[self.relation]
            return f"{speaker} {verb} {self.name}."
        verb = {"lives_in": "lives in", "works_at": "works at", "studies_at": "studies at",
                "married_to": "is married to", "partner_of": "is engaged to"}[self.relation]
        return f"{speaker} {verb} {self.name}."


#: session 30: a sentence of the speaker's with no subject ("Got a job at the Marine Institute", "Started at
#: St. Luke's in January", "Been here since March last year", "Moved back in 2022"): chat drops the "I"
_SUBJECTLESS = re.compile(r"^(?:(?:and|then|so|also|oh|yes|yep|yeah|haha)\W+)?"
                          r"(?=(?:got|started|moved|joined|landed|took|found|been|came|quit|left)\b)", re.IGNORECASE)
#: "Work at Serra Azul Mineração is ok": the speaker's work named as the sentence's subject
_WORK_OPENING = re.compile(rf"^(?:[Ww]ork|[Mm]y (?:new )?job|[Tt]he (?:new )?job) (?:at|with|for) {_NAME}")


#: where a chat line's sentences end: after . ! ? (not "St." or "Dr." before a name) or an emoji
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])(?<!\bSt\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMt\.)"
                           r"|(?<=[\U0001F300-\U0001FAFF\u2600-\u27BF]))\s+")


def sentences(text: str) -> list[str]:
    """A chat line's sentences.

    >>> sentences("Passed last November 🙏 Started at St. Luke's in January. ER.")
    ['Passed last November 🙏', "Started at St. Luke's in January.", 'ER.']
    """
    return _SENTENCE_END.split(text)


def with_subject(sentence: str) -> str:
    """``sentence`` with "I" put back where chat dropped it ("Got a job at X" → "I got a job at X", "Been here
    since May" → "I've been here since May"); else ``sentence``.

    >>> with_subject("Got a job at the Marine Institute out in Oranmore"), with_subject("Been here since March.")
    ('I got a job at the Marine Institute out in Oranmore', "I've been here since March.")
    """
    m = _SUBJECTLESS.match(sentence)
    if m is None:
        return sentence
    rest = sentence[m.end():]
    verb = rest[0].lower() + rest[1:]
    return sentence[:m.end()] + ("I've " if verb.startswith("been") else "I ") + verb


def _speaks_of_studies(text: str) -> bool:
    """Does ``text`` speak of studies (a degree, a course, a school year)?"""
    return _STUDY.search(text) is not None or _STUDY_YEAR.search(text) is not None


def _studied_there(sentence: str, m: re.Match[str]) -> bool:
    """Does the clause of ``sentence`` that ``m`` opens speak of studies?"""
    end = re.search(r"[,;]|\bbut\b", sentence[m.end():])
    return _speaks_of_studies(sentence[m.start():m.end() + end.start()] if end else sentence[m.start():])


def line_states(text: str) -> list[LineState]:
    """Where the speaker of a line says they live or work, in a first-person clause that names the
    place or employer ("I'm sharing an apartment in Osaka", "I work at Ridgeway High", "we moved to
    Basel", "I'm a software developer at Avast", "I'm with Deloitte now"), and whom they married, got
    engaged to, broke up with or divorced ("Petra and I got married", "Erik and I split up"); not in
    a question and not after a hedge, plan or negation in its sentence.

    >>> [(s.relation, s.name) for s in line_states("I just started at Sony, and I'm sharing an apartment in Osaka.")]
    [('lives_in', 'Osaka'), ('works_at', 'Sony')]
    >>> [(s.relation, s.name, s.ended) for s in line_states("Erik and I split up last summer.")]
    [('partner_of', 'Erik', True)]
    """
    out: list[LineState] = []
    switches = _WORK_CUE.search(text) is not None
    for sentence in sentences(text):
        told = _TELLING_ASKED.search(sentence) if sentence.rstrip().endswith("?") else None
        if told:  # "Did I ever tell you I spent 1999 in Macau?": a past told late, read with its years only
            sentence = sentence[told.end():].rstrip(" ?") + "."
        if sentence.rstrip().endswith("?"):
            out += [LineState("lives_in", _bare_name(m), sentence.strip()) for m in _GUESS_WHO.finditer(sentence)
                    if _bare_name(m) not in _NOT_NAMES]
            continue
        sentence = with_subject(sentence)
        found = [(m, rel, False) for rx, rel in _LINE_STATES for m in rx.finditer(sentence)]
        found += [(m, "works_at", False) for m in _WORK_OPENING.finditer(sentence)]
        found += [(m, rel, ended) for rx, rel, ended in _PAIRS for m in rx.finditer(sentence)]
        if switches:
            found += [(m, "works_at", False) for m in _SWITCHED.finditer(sentence)]
        studying = _speaks_of_studies(sentence)
        if switches or studying:
            # session 30: studies only in the place's own clause ("Still at Intel, they're paying half of the
            # master's" is a job that pays for one)
            for rx in _AT_PLACE:
                for m in rx.finditer(sentence):
                    studied = _studied_there(sentence, m)
                    if switches or studied:
                        found.append((m, "studies_at" if studied else "works_at", False))
        found += [(m, "studies_at", False) for m in _STUDIES.finditer(sentence)
                  if line_owner(sentence, "", m.group(1)) is None]  # not "my sister's master's at Oxford"
        found += [(m, "studies_at", False) for m in _TERM_AT.finditer(sentence)
                  if _SCHOOL_NAME.search(m.group(1)) and line_owner(sentence, "", m.group(1)) is None]
        found += [(m, "works_at", False) for m in _STARTS_AT.finditer(sentence)]
        found += [(m, "works_at", True) for m in _SOLD.finditer(sentence)]
        found += [(m, "works_at", False) for m in _SET_UP.finditer(sentence) if m.group(1) not in _TIME_NAMES]
        # "I'm not at Central anymore" is a negation on purpose; every other clause must be plain
        found = [(m, "works_at", True) for m in _NOT_AT.finditer(sentence)] + [
            (m, rel, ended) for m, rel, ended in found
            if _plain_clause(sentence, m.start()) and not _NOT_PLAIN.search(m.group(0))]
        timed = [(m, rel, ended, "", "") for m, rel, ended in found] + _told_late(sentence, studying)
        if told:
            timed = [t for t in timed if t[3]]
        for m, rel, ended, time, clause in timed:
            name = _bare_name(m)
            if ended and rel == "partner_of" and _DIVORCED.search(sentence):
                rel = "married_to"  # "Lucie and I separated in 2021 and the divorce was finalised last year"
            state = LineState(rel, name, sentence.strip(), ended, time=time, clause=clause)
            if name not in _NOT_NAMES and name not in _TIME_NAMES and state not in out:
                out.append(state)
    for m in _OWN_BUSINESS.finditer(text):
        sentence = re.split(r"(?<=[.!?])\s+", text[:m.start()])[-1] + text[m.start():m.end()]
        at = len(sentence) - (m.end() - m.start())
        state = LineState("works_at", _bare_name(m), sentence.strip(), clause=sentence)
        if not _NOT_PLAIN.search(sentence[:at]) and state.name not in _NOT_NAMES and state not in out:
            out.append(state)
    return out


#: session 29: a place of work (or study) the speaker has been at a while ("I've been at Mercado Libre since
#: January", "I've been at Avast for three years now")
_BEEN_AT = re.compile(rf"\bI(?:'ve| have) {_ADV}been (?:at|with) {_NAME}(?=[^.!?]*\b(?:since|for|now|these days)\b)")
_DURATION = re.compile(r"\bfor (?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|\d+) "
                       r"(?:years?|months?)(?: now)?\b", re.IGNORECASE)
#: a return home ("so I came back to Brno in early 2022"), not a trip ("came back to Rome for a week")
_CAME_BACK = re.compile(rf"\b(?:I|[Ww]e)(?:'ve| have)? {_ADV}(?:came|come) back (?:home )?to {_NAME}"
                        r"(?![^.!?]*\bfor (?:a|an|the|one|two|three|\d+) (?:few )?(?:days?|nights?|weeks?|weekend|"
                        r"holidays?|visit)\b)")
#: a time word after a return ("… back to Brno in early 2022"): "I came back to Milan with three words of Spanish",
#: told of an Erasmus semester fifteen years on, says nothing of where she lives now
_DATED = re.compile(rf"\b(?:(?:19|20)\d\d|last|ago|since|this|{timeexpr.MONTH_ALTERNATION}|"
                    rf"{timeexpr.SEASON_ALTERNATION})\b", re.IGNORECASE)
#: a job lost in other words ("the layoffs at Avast got me in February", "Avast let me go")
_LET_GO = (re.compile(rf"\blayoffs? at {_NAME} (?:got|hit|caught) me\b"),
           re.compile(rf"{_NAME} (?:let me go|laid me off|made me redundant|fired me)\b(?! to\b)"))
#: a past told with its years ("in 2006 and 2007, I lived in Dublin … and worked at a Dell call centre", "I spent
#: 2008 to 2010 in Montevideo, working at Sabre's office there"): read only with a range or one past year
#: (:data:`_PAST_YEAR`) in the sentence
_PAST_STATES = (
    (re.compile(rf"\bI(?: {_ADV}| [a-z]+(?: [a-z]+)? and )(?:lived|was living|was based) in {_NAME}"), "lives_in"),
    (re.compile(rf"\bI {_ADV}spent [^.!?]{{0,40}}? in {_NAME}"), "lives_in"),
    (re.compile(rf"\b(?:worked|was working|working) (?:as (?:an? )?(?:[a-z]+ ){{0,2}})?(?:at|for) (?:an? )?{_NAME}"),
     "works_at"),
    (re.compile(rf"\b(?:I|and) was (?:an? |the )(?:[a-z]+ ){{1,3}}?(?:at|for|with) (?:an? )?{_NAME}"), "works_at"),
    (re.compile(rf"\b(?:interning|training|volunteering) (?:at|for|with) {_NAME}"), "works_at"),
    (re.compile(rf"\bas an? (?:[a-z]+ ){{0,2}}(?:trainee|intern|apprentice|{_ROLE}) (?:at|for|with) {_NAME}"), "works_at"),
    (re.compile(rf"\bstudying (?:[a-z]+ ){{0,3}}at {_NAME}"), "studies_at"),
)
#: one past year ("I spent all of 2007 in Seoul", "in 2006 … I lived in Arusha for a year"): read as that whole
#: year, and only with a past-tense state and nothing that says it goes on
_PAST_YEAR = re.compile(r"\b(?:all of|throughout|during|spent) ((?:19|20)\d\d)\b(?! (?:to|and|until|till|through)\b)|"
                        r"\bin ((?:19|20)\d\d)\b(?! (?:to|and|until|till|through)\b)", re.IGNORECASE)
_GOES_ON = re.compile(r"\b(?:still|since|now|currently|these days)\b", re.IGNORECASE)
_DIVORCED = re.compile(r"\bdivorc", re.IGNORECASE)
#: where the clause before a match begins: "I never told you this, but in 2006 I lived in Dublin" is plain, and
#: so is "she's not in Nairobi anymore — she moved to London" (a dash, session 33)
_CLAUSE_START = re.compile(r".*(?:[,;:—–]|\s-\s|\bbut\b)", re.DOTALL)


def _clause_before(sentence: str, at: int) -> str:
    m = _CLAUSE_START.match(sentence[:at])
    return sentence[m.end():at] if m else sentence[:at]


def _plain_clause(sentence: str, at: int) -> bool:
    """No hedge, plan or negation (:data:`_NOT_PLAIN`) in the clause before ``at``."""
    return not _NOT_PLAIN.search(_clause_before(sentence, at))


#: how a past told late is introduced ("I never told you I spent 2008 there …"): no negation of what follows
_PREFACE = re.compile(r"\bI (?:never|didn't|did not)(?: really| ever)? (?:told|tell|mentioned|mention|said)"
                      r"(?: (?:you|anyone|anybody|this|that|it|about it))*\b", re.IGNORECASE)


def _plain_before(sentence: str, at: int) -> bool:
    """No hedge, plan or negation in the clause before ``at``, a preface of a past told late aside."""
    return not _NOT_PLAIN.search(_PREFACE.sub("", _clause_before(sentence, at)))  # _plain_clause, preface aside


def _own_past(sentence: str, name: str) -> bool:
    """Is the state naming ``name`` the speaker's?  :func:`line_owner` takes "Seoul" in "in Seoul as a trainee
    at Samsung" for a subject; a place the line puts the speaker "in" is none."""
    owner = line_owner(sentence, "", name)
    return owner is None or re.search(rf"\bin {re.escape(owner)}\b", sentence) is not None


_BRANCH = re.compile(r"\s+(?:[a-z]+\s+)?(?:office|offices|site|branch|headquarters|HQ|factory|plant|lab|store)\b")


def _bare_name(m: re.Match[str]) -> str:
    """The name a match holds; an employer's without the part of it that names a branch ("Sabre's office
    there" → "Sabre", "Despegar's US office" → "Despegar"), never "McDonald's" or "St James's Hospital"."""
    name = next(g for g in m.groups() if g)
    if "'s" in name and _BRANCH.match(m.string, m.end()):
        return re.sub(r"'s\b.*$", "", name) or name
    return name


#: session 33: how long the speaker has been at a place, said as the clause's subject ("almost a year at Kestrel
#: Consulting now, joined last july"): ongoing only with "now"
_SPAN_WORDS = r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d+) (?:years?|months?)"
_TIME_AT = re.compile(r"(?:^|[,;.!]\s+|\b(?:and|but|so) )(?:(?:almost|nearly|over|about|just over|more than) )?"
                      rf"{_SPAN_WORDS} (?:at|with) (?-i:{_NAME}) now\b", re.IGNORECASE)
#: the span inside a :data:`_TIME_AT` match ("a year" of "almost a year at Kestrel Consulting now")
_SPAN = re.compile(rf"\b{_SPAN_WORDS}\b", re.IGNORECASE)


def _told_late(sentence: str, studying: bool) -> list[tuple[re.Match[str], str, bool, str, str]]:
    """Session 29's first-person states of a line, each with its own time: ``(match, relation, ended, time
    phrase, clause)`` — a place been at "since" or "for three years", a return home and a job lost to layoffs
    (the time words of their own clause: "separated in 2021 …, so I came back to Brno in early 2022"), and a
    past told with its years."""
    out: list[tuple[re.Match[str], str, bool, str, str]] = []
    for m in _BEEN_AT.finditer(sentence):
        if _plain_clause(sentence, m.start()):
            duration = _DURATION.search(sentence, m.end())
            out.append((m, "studies_at" if studying else "works_at", False, duration.group(0) if duration else "", ""))
    for m in _TIME_AT.finditer(sentence):
        span = _SPAN.search(m.group(0))
        if span and _plain_clause(sentence, m.start()) and line_owner(sentence, "", m.group(1)) is None:
            out.append((m, "studies_at" if studying else "works_at", False, f"for {span.group(0)} now", ""))
    for m in _CAME_BACK.finditer(sentence):
        if _plain_clause(sentence, m.start()) and _DATED.search(sentence[m.end():]):
            out.append((m, "lives_in", False, "", sentence[m.start():]))
    out += [(m, "works_at", True, "", sentence[m.start():]) for rx in _LET_GO for m in rx.finditer(sentence)
            if not _not_a_subject_name(_bare_name(m))]
    past = range_phrase(sentence)
    if not past and not _GOES_ON.search(sentence):
        years = list(_PAST_YEAR.finditer(sentence))
        whole = [m.group(1) for m in years if m.group(1)]  # "all of 2007" before "in 2008"
        if years:
            year = (whole or [years[0].group(2)])[0]
            past = f"between {year} and {year}"
    if past:
        for rx, rel in _PAST_STATES:
            for m in rx.finditer(sentence):
                if _plain_before(sentence, m.start()) and _own_past(sentence, m.group(1)):
                    out.append((m, rel, False, past, ""))
    return out


_REPORTED = re.compile(r"\b(?:telling|tells|told|talking|talks|talked|saying|says|said|mention\w*|shar(?:ing|es|ed)|"
                       r"explain\w*|updat(?:ing|es|ed))\b(?: \w+)?(?: about| that)? ([A-Z][a-z][\w-]*)'s\b")


_REPORTED_THAT = re.compile(r"\b(?:telling|tells|told|saying|says|said|mention\w*|explain\w*|inform\w*)(?: \w+)? that "
                            r"([A-Z][a-z][\w-]*)\b(?!')")
#: session 33: "Tomasz said Pawel left Portova and moved to Gdynia": "that" left out, the name then its verb
_REPORTED_BARE = re.compile(r"\b(?:saying|says|said|mention(?:s|ed|ing)|explain(?:s|ed|ing)|add(?:s|ed|ing))(?: that)? "
                            r"([A-Z][a-z][\w-]*) (?:has |had |is |was )?(?:now |also |just |finally |recently )?"
                            r"(?:left|moved|lives|lived|works|worked|got|started|joined|quit|is|was|has)\b")
#: session 33: "Tomasz congratulated Kenji on his new job at Ferrowick Engineering": the news is Kenji's
_CONGRATULATED = re.compile(r"\bcongratulat(?:es|ed|ing) ([A-Z][a-z][\w-]*) on\b")
#: fifth cut: "telling Sipho about Lwazi finishing his degree and getting a job at …": what Lwazi did
_REPORTED_ABOUT = re.compile(r"\b(?:telling|tells|told|talking|talks|talked|inform\w*|updat(?:ing|es|ed))(?: \w+)? about "
                             r"([A-Z][a-z][\w-]*) [a-z]+ing\b")
#: a new subject inside the reported clause ("that Anders retired and she moved"): the clause is not his alone
_NEW_SUBJECT = re.compile(r"[.;!?]|\b(?:I|he|she|they|we)\b")


def reported_owner(statement: str, subject: str, obj: str) -> str | None:
    """Whose state a reported statement gives: "Diego is telling Priya about Carmen's living
    situation in Seville" speaks of Carmen's home, and "Olga told Tess that Anders retired and moved
    to Gotland" of Anders's, not the teller's.  The name after a verb of telling ("'s" after it, or
    "that" before it, or the name and its verb right after it: "said Pawel left …"), when it is not
    ``subject`` and ``obj`` follows it in its clause; else ``None``.

    >>> reported_owner("Diego is telling Priya about Carmen's living situation in Seville.", "Diego", "Seville")
    'Carmen'
    >>> reported_owner("Olga told Tess that Anders finally retired and moved to Gotland.", "Olga", "Gotland")
    'Anders'
    >>> reported_owner("Jon moved into Gina's old flat in Berlin.", "Jon", "Berlin") is None
    True
    >>> reported_owner("Tomasz said Pawel left Portova and moved to Gdynia in the spring.", "Tomasz", "Gdynia")
    'Pawel'
    """
    m = _REPORTED.search(statement)
    if m is not None and m.group(1) != subject and m.group(1) not in _NOT_NAMES:
        at = statement.find(obj, m.end()) if obj else -1
        if at >= 0 and not _CLAUSE_BREAK.search(statement[m.end():at]) and len(statement[m.end():at].split()) <= 8:
            return m.group(1)
    for rx in (_REPORTED_THAT, _REPORTED_ABOUT, _REPORTED_BARE, _CONGRATULATED):
        m = rx.search(statement)
        if m is not None and m.group(1) != subject and m.group(1) not in _NOT_NAMES:
            at = statement.find(obj, m.end()) if obj else -1
            if at >= 0 and not _NEW_SUBJECT.search(statement[m.end():at]):
                return m.group(1)
    return None


#: session 28: who a line's clause speaks of — a name before its verb ("Katerina got the job at …"), or he/she
_SUBJECT_TOKEN = re.compile(
    r"\b(?:(?P<first>I|[Ww]e)\b|(?P<pronoun>[Ss]he|[Hh]e)\b(?:'s|'d| [a-z]+)|"
    r"(?P<kin>\b(?:(?:[Mm]y|[Oo]ur) (?:(?:little|big|older|younger|twin) )?(?:{kin})|Mom|Mum|Dad|Mama|Papa)s?"
    r"(?= [a-z]+\b))|"
    r"(?P<name>(?-i:[A-Z][a-z][\w-]*))(?='s\b| (?:is|was|has|had|got|just|finally|now|still|also|recently|"
    r"then|already|[a-z]+(?:ed|es|s))\b))".format(kin=_KIN_WORDS))
#: capitalised words that open a sentence without naming anyone ("Mostly just chilling at home")
_NOT_SUBJECT_NAMES = frozenset("""Today Tonight Yesterday Tomorrow Anyway Maybe Sometimes Still Then Later Lately
    Everyone Everybody Everything Nothing Nobody Someone Somebody Something Life Work Things It This That These Those
    There Here Yes No Yeah Oh Well Thanks Sorry Please Ha Haha Wow Mine Yours Ours Hers Theirs
    One Two Three Four Five Six Seven Eight Nine Ten Eleven Twelve Twenty Thirty Forty Fifty Both Half Most""".split())


def _not_a_subject_name(word: str) -> bool:
    return word in _NOT_NAMES or word in _NOT_SUBJECT_NAMES or word.endswith("ly") or word.lower() in KIN


#: what makes a name before "she"/"he" a person: a word of kin or company before it, or "and I" after it
_PERSON_CUE = re.compile(rf"\b(?:{_KIN_WORDS}|dating|with|married|marry|marrying|engaged to|friend|colleague|boss|"
                         r"neighbou?r|met)\s+(?:(?:my|our|his|her|little|big|older|younger)\s+)*$", re.IGNORECASE)


def line_owner(line: str, speaker: str, obj: str) -> str | None:
    """Whose state does ``obj`` name in the ``speaker``'s ``line``?  The subject of the clause it is in:
    ``None`` for the speaker's own ("I", "we", or no subject of its own: "…, and started a master's at
    Aristotle University"), a name for someone else's ("Katerina got the job at the big pharmacy in
    Patras"; "I'm dating Zainab, she's a doctor at Lagos University Teaching Hospital"), ``""`` for
    someone else whom the line does not name ("he's with Qatar National Bank now" with no person before).

    >>> line_owner("Katerina got the job at the big pharmacy in Patras, so now she lectures me.", "Nikos", "Patras")
    'Katerina'
    >>> line_owner("Ha, no, I'm dating Zainab, she's a doctor at Lagos University Teaching Hospital.", "Olu",
    ...            "Lagos University Teaching Hospital")
    'Zainab'
    >>> line_owner("I quit Costamare in July and started a master's at Aristotle University.", "Nikos", "Aristotle University") is None
    True
    """
    at = line.lower().find(obj.lower().strip()) if obj.strip() else -1
    if at < 0:
        return None
    start = max(line.rfind(c, 0, at) for c in ".!?;") + 1
    subjects = [m for m in _SUBJECT_TOKEN.finditer(line, start, at)
                if not (m.group("name") and (_not_a_subject_name(m.group("name"))
                                             or m.group("name").lower() in obj.lower()))]
    if not subjects:
        return None
    last = subjects[-1]
    if last.group("first"):
        return None
    if last.group("kin"):
        return ""  # "my mom still lives in Lagos": a relative's, unnamed here
    name = last.group("name")
    if name and re.search(r"\b(?:[Mm]e|I|[Ww]e) (?:and|&) $", line[:last.start()]):
        return None  # "Me and Tom moved to Paris": the speaker's too
    if name:
        return None if name == speaker else name
    named_subjects = {m.start("name") for m in subjects if m.group("name")}
    for m in reversed(list(re.finditer(r"(?-i:\b[A-Z][a-z][\w-]*)", line[:last.start()]))):
        name = m.group(0)
        if _not_a_subject_name(name) or name == speaker:
            continue
        before, after = line[:m.start()], line[m.end():m.end() + 7]
        if m.start() in named_subjects or _PERSON_CUE.search(before) or re.match(r"\s+and (?:I|me)\b", after):
            return name
    return ""


#: session 30: how long a marriage has lasted, said by one of the two ("Three years married and Laila still can't
#: believe it", "married for eight months", "Since last October, so yes, eight months of being Hendra's wife")
_NUMBER = r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several|\d+)"
_MARRIED_FOR = re.compile(rf"\b({_NUMBER} (?:years?|months?|weeks?)) (?:married\b|of (?:being )?(?:married|"
                          rf"marriage)\b)|\bmarried for ({_NUMBER} (?:years?|months?|weeks?))\b", re.IGNORECASE)
_MARRIED_SINCE = re.compile(r"\b(?:married|wife|husband)\b", re.IGNORECASE)


def marriage_length(text: str) -> str:
    """The time phrase that dates the speaker's marriage in a line: "for three years" for "Three years married"
    or "married for three years", or a "since …" phrase in a sentence that speaks of marriage; ``""`` when none.

    >>> marriage_length("Eighteen months, and she talks. Three years married and Laila still can't believe it.")
    'for Three years'
    >>> marriage_length("Since last October, so yes, eight months of being Hendra's wife at every family event.")
    'since last October'
    """
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        if sentence.rstrip().endswith("?"):
            continue
        since = re.search(r"\bsince ((?:last |early |late )?[A-Za-z]+(?: (?:last year|(?:19|20)\d\d))?)", sentence,
                          re.IGNORECASE)
        if since is not None and _MARRIED_SINCE.search(sentence) and not _NOT_PLAIN.search(sentence[:since.start()]):
            return "since " + since.group(1)
        m = _MARRIED_FOR.search(sentence)
        if m is not None and not _NOT_PLAIN.search(sentence[:m.start()]):
            return "for " + (m.group(1) or m.group(2))
    return ""


#: a title before a speaker's name ("Dr Hyejin defended in February"): the subject is the speaker
_HONORIFIC = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Miss|Mx|Prof|Professor)\.?\s+(\S.*)$")


def plain_subject(subject: str, speakers: list[str] | tuple[str, ...]) -> str:
    """"Dr Hyejin" → "Hyejin" (a congratulation's title would split her facts in two, and "Dr Hyejin left
    MIT" would not close "Hyejin works_at MIT"): a title before a speaker's name or a single first name;
    else ``subject``.

    >>> plain_subject("Mrs Adaeze", ["Malik", "Adaeze"])
    'Adaeze'
    """
    m = _HONORIFIC.match(subject)
    if m is None:
        return subject
    name = m.group(1)
    return name if name in speakers or re.fullmatch(r"[A-Z][a-z][\w'-]*", name) else subject


def described_person(statement: str, name: str) -> bool:
    """Does ``statement`` describe ``name`` as someone ("Ville, who is a carpenter", "Ville who fixed my
    case")?  Then a ``works_at`` or ``studies_at`` fact naming them names no employer or school.

    >>> described_person("Aino mentioned Ville, who is a carpenter.", "Ville"), described_person(
    ...     "Aino works at Nokia, which is in Espoo.", "Nokia")
    (True, False)
    """
    return bool(name.strip()) and re.search(rf"\b{re.escape(name.strip())},? who\b", statement) is not None


#: the last word of a company's name ("Clover Systems", "Lumen Retail Group", "Gulfstar Telecom")
_COMPANY_WORD = re.compile(
    r"\b(?:Systems|Group|Games|Labs?|Consulting|Consultancy|Analytics|Mobility|Robotics|Telecom|Capital|Logistics|"
    r"Software|Insurance|Energy|Technolog(?:y|ies)|Tech|Solutions|Partners|Holdings|Inc|Ltd|LLC|GmbH|AG|"
    r"Corp(?:oration)?|Media|Ventures|Industries|Pharma(?:ceuticals)?|Motors|Airlines?|Chemicals|Engineering|"
    r"Construction|Contracting|Infotech|Bank|Pay)\.?$")


def organisation_named(obj: str) -> bool:
    """Does ``obj`` end as a company's name does ("Clover Systems", "Gulfstar Telecom")?  Then it is no home
    and no partner (session 33: "left Brightwater and moved to Clover Systems" typed ``lives_in``).

    >>> organisation_named("Clover Systems"), organisation_named("Lumen Retail Group"), organisation_named("Cork")
    (True, True, False)
    """
    return " " in obj.strip() and _COMPANY_WORD.search(obj.strip()) is not None


def a_project(obj: str) -> bool:
    """Is ``obj`` a project ("bridge project in Cairo", "the Riverside project"), which one works on, not for?
    Then a ``works_at`` fact naming it names no employer (session 30: "started at Orascom Construction in
    September, and now I'm on a bridge project in Cairo" closed Orascom).

    >>> a_project("bridge project in Cairo"), a_project("Project Lead Ltd")
    (True, False)
    """
    return re.match(r"(?:(?:an?|the|my|his|her|their|our)\s+)?(?:[\w-]+\s+){0,3}?projects?\b", obj.strip()) is not None


def pair_subject(subject: str, obj: str) -> str | None:
    """"Lucie and Radek" ``married_to`` "Radek": the couple as subject and one of them as object — the
    other one is the subject ("Lucie"); ``None`` when ``subject`` is no such pair.

    >>> pair_subject("Lucie and Radek", "Radek")
    'Lucie'
    """
    m = re.fullmatch(r"(.+?)\s+(?:and|&)\s+(.+)", subject.strip())
    if m is None:
        return None
    first, second = m.group(1), m.group(2)
    if second.lower() == obj.strip().lower():
        return first
    if first.lower() == obj.strip().lower():
        return second
    return None


__all__ = ["KIN", "KinMention", "a_project", "described_person", "employer_named", "pair_subject", "plain_subject", "ending_governs", "engaged_only", "kin_mentions", "LineState", "marriage_length", "line_owner", "sentences", "with_subject", "line_states", "range_phrase", "reported_owner", "state_clauses"]
