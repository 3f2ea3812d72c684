"""Synthetic texts and mixed-quality summaries / expansions for pbrl's demo task.

Everything takes an explicit `random.Random`, so the output is a pure function of the seed.
A text is one or two short sentences built from templates; `good_*` and `bad_*` completions
are what the pretraining corpus mixes (see `make_demo.py`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# ------------------------------------------------------------------------------------------
# Vocabulary (a few hundred words)
# ------------------------------------------------------------------------------------------

AGENTS = """fisherman baker teacher farmer doctor sailor painter student nurse pilot driver soldier
king queen merchant hunter gardener miller tailor singer poet dancer monk priest judge clerk
captain guard shepherd weaver potter carpenter blacksmith cook waiter boy girl child woman man
stranger traveler neighbor widow prince princess wizard knight""".split()

ANIMALS = """cat dog fox horse goat rabbit owl crow mouse bear wolf duck""".split()

ADJECTIVES = """old young tall small quiet busy tired happy angry brave clever lazy kind proud
shy gentle rich poor lonely careful curious cheerful grumpy honest patient strong weak sleepy
friendly nervous""".split()

OBJ_ADJECTIVES = """blue red green yellow white black brown wooden broken heavy new old shiny dusty
tiny huge heavy rusty golden silver warm cold wet dry""".split()

VERBS = """repaired painted cleaned carried found lost sold bought opened closed washed built
mended polished hid packed dropped fixed filled emptied moved locked unlocked burned wrapped
delivered borrowed stole returned checked counted tied folded watched""".split()

OBJECTS = """boat house bicycle basket letter door window fence wagon lantern barrel chair table
bucket ladder blanket kettle cart chest drum violin map book coat hat box bag rope net sail
mirror clock bell key jar bowl cup plate""".split()

# (preposition, place noun) pairs; rendered "near the harbor" etc.
PLACES = [
    ("near", "harbor"), ("in", "kitchen"), ("at", "market"), ("by", "river"), ("in", "garden"),
    ("near", "bridge"), ("in", "village"), ("at", "station"), ("in", "forest"), ("on", "hill"),
    ("near", "church"), ("in", "barn"), ("at", "school"), ("by", "lake"), ("in", "square"),
    ("near", "mill"), ("in", "cellar"), ("at", "farm"), ("on", "beach"), ("in", "workshop"),
    ("near", "castle"), ("in", "yard"), ("at", "inn"), ("by", "well"), ("in", "attic"),
    ("near", "road"), ("in", "valley"), ("at", "port"), ("on", "island"), ("in", "library"),
]

# Time phrases (all words lowercase); some carry content words.
TIMES = [
    "before the storm", "after dinner", "in the morning", "at night", "on sunday",
    "during the winter", "after the rain", "before sunrise", "in the evening", "at noon",
    "after the festival", "before the wedding", "during the summer", "on monday",
    "after breakfast", "before the market", "in the spring", "at dawn", "at dusk",
    "after the flood",
]

# Intransitive second-sentence verbs.
VERBS2 = """waited rested smiled laughed slept sang worked walked returned left stayed watched
cried shouted""".split()

# Words used by off-topic / generic expansion clauses (mostly NOT in a given text).
GENERIC_CLAUSES = [
    "because the weather was nice", "and everyone was happy", "and then went home",
    "so nobody noticed", "while the birds sang", "and the day ended quietly",
    "because it was needed", "as the sun went down", "and the neighbors watched",
    "while the children played", "though it took a long time", "and nobody said a word",
]

POSSESSIVES = {"his", "her", "their"}


@dataclass
class Text:
    text: str
    agent: str          # e.g. "fisherman"
    agent_adj: str      # may be ""
    verb: str
    obj: str
    obj_adj: str        # may be ""
    det: str            # "the" / "his" / "her" / "their" / "a"
    place: tuple[str, str] | None
    time: str | None
    second: str | None = None  # the second sentence (without final period)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def make_text(rng: random.Random) -> Text:
    agent = rng.choice(AGENTS + ANIMALS if rng.random() < 0.15 else AGENTS)
    agent_adj = rng.choice(ADJECTIVES) if rng.random() < 0.6 else ""
    verb = rng.choice(VERBS)
    obj = rng.choice(OBJECTS)
    obj_adj = rng.choice(OBJ_ADJECTIVES) if rng.random() < 0.6 else ""
    if obj_adj == agent_adj:
        obj_adj = ""
    det = rng.choice(["the", "the", "his", "her", "their", "a"])
    if det == "a" and obj_adj[:1] in tuple("aeiou") or det == "a" and not obj_adj and obj[:1] in tuple("aeiou"):
        det = "the"
    two = rng.random() < 0.35
    # Keep texts short (8..16 words) so a faithful expansion fits in ~32 tokens.
    place = rng.choice(PLACES) if rng.random() < (0.5 if two else 0.75) else None
    time = rng.choice(TIMES) if rng.random() < (0.3 if two else 0.6) else None
    if not two and place is None and time is None:  # at least ~8 words
        place = rng.choice(PLACES)
    subj = "the " + (agent_adj + " " if agent_adj else "") + agent
    obj_np = det + " " + (obj_adj + " " if obj_adj else "") + obj
    s1 = f"{subj} {verb} {obj_np}"
    if place:
        s1 += f" {place[0]} the {place[1]}"
    if time:
        s1 += f" {time}"
    second = None
    if two:
        kind = rng.randrange(3)
        pron = rng.choice(["he", "she", "they"]) if agent not in ANIMALS else "it"
        if kind == 0:
            second = f"{pron} {rng.choice(VERBS2)}" + (f" {rng.choice(['all day', 'for hours', 'until dark', 'quietly', 'alone'])}")
        elif kind == 1:
            second = f"the {obj} was {rng.choice(OBJ_ADJECTIVES)} again"
        else:
            p2 = rng.choice(PLACES)
            second = f"then {pron} {rng.choice(VERBS2)} {p2[0]} the {p2[1]}"
    text = _cap(s1) + "." + (f" {_cap(second)}." if second else "")
    return Text(text, agent, agent_adj, verb, obj, obj_adj, det, place, time, second)


# ------------------------------------------------------------------------------------------
# Completions
# ------------------------------------------------------------------------------------------


def good_summary(t: Text, rng: random.Random) -> str:
    k = rng.randrange(4)
    if k == 0:
        return f"The {t.agent} {t.verb} the {t.obj}."
    if k == 1:
        return f"{_cap(t.agent)} {t.verb} {t.obj}."
    if k == 2 and t.agent_adj:
        return f"The {t.agent_adj} {t.agent} {t.verb} the {t.obj}."
    if t.place:
        return f"The {t.agent} {t.verb} the {t.obj} {t.place[0]} the {t.place[1]}." if rng.random() < 0.3 else f"{_cap(t.agent)} {t.verb} the {t.obj}."
    return f"The {t.agent} {t.verb} {t.det} {t.obj}."


def _faithful_clause(t: Text, rng: random.Random) -> str:
    k = rng.randrange(6)
    adj = t.obj_adj or rng.choice(OBJ_ADJECTIVES)
    if k == 0:
        return f"and the {t.obj} was {adj}"
    if k == 1:
        return f"because the {t.agent} was {t.agent_adj or 'busy'}"
    if k == 2:
        return f"so the {t.obj} was ready"
    if k == 3 and t.place:
        return f"while the {t.agent} stayed {t.place[0]} the {t.place[1]}"
    if k == 4:
        return f"and the {t.agent} {t.verb} the {t.obj} again"
    return f"and then the {t.agent} was {rng.choice(ADJECTIVES)}"


def _add_clause(text: str, clause: str) -> str:
    # Insert the clause before the final period of the text.
    body = text[:-1] if text.endswith(".") else text
    return f"{body}, {clause}."


def good_expansion(t: Text, rng: random.Random) -> str:
    return _add_clause(t.text, _faithful_clause(t, rng))


def bad_summary(t: Text, rng: random.Random, other: Text) -> str:
    k = rng.randrange(6)
    if k == 0:  # copy of the whole text
        return t.text
    if k == 1:  # too long: first sentence, or the text minus the time phrase
        first = t.text.split(". ")[0].rstrip(".") + "."
        if t.time and rng.random() < 0.5:
            first = first.replace(" " + t.time, "")
        return first
    if k == 2:  # off-topic: a summary of another text
        return good_summary(other, rng)
    if k == 3:  # partly off-topic: wrong object / verb
        return f"The {t.agent} {rng.choice(VERBS)} the {rng.choice(OBJECTS)}."
    if k == 4:  # one or two words
        return rng.choice([_cap(t.agent) + ".", f"The {t.obj}.", _cap(t.verb) + "."])
    # long and partly off-topic
    return _add_clause(t.text, rng.choice(GENERIC_CLAUSES))


def bad_expansion(t: Text, rng: random.Random, other: Text) -> str:
    k = rng.randrange(6)
    if k == 0:  # too short: a summary
        return good_summary(t, rng)
    if k == 1:  # truncated text
        w = t.text.rstrip(".").split()
        n = max(2, len(w) // 2 - rng.randrange(2))
        return " ".join(w[:n]) + "."
    if k == 2:  # off-topic: another text's expansion
        return good_expansion(other, rng)
    if k == 3:  # generic (off-topic) clause
        return _add_clause(t.text, rng.choice(GENERIC_CLAUSES))
    if k == 4:  # words swapped for unrelated ones
        return _add_clause(t.text.replace(t.obj, rng.choice(OBJECTS)).replace(t.agent, rng.choice(AGENTS)),
                           rng.choice(GENERIC_CLAUSES))
    # short and vague
    return rng.choice(["It happened.", f"The {t.agent} was there.", "Something happened that day.",
                       f"The {t.obj} was {rng.choice(OBJ_ADJECTIVES)}."])


def vocabulary_size() -> int:
    ws: set[str] = set()
    for lst in (AGENTS, ANIMALS, ADJECTIVES, OBJ_ADJECTIVES, VERBS, OBJECTS, VERBS2):
        ws.update(lst)
    for p, n in PLACES:
        ws.update((p, n))
    for tm in TIMES:
        ws.update(tm.split())
    for c in GENERIC_CLAUSES:
        ws.update(c.split())
    return len(ws)
