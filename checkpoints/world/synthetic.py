"""A deterministic, embedded TOFU-like world of fictitious authors (needs no file or network).

Every author gets one value for each fact kind in `FACT_KINDS` (birthplace, birth date, genre,
parents' professions, an award, two book titles, a recurring theme, a home country). Each fact
becomes one annotated QA item whose answer is `prefix + " " + entity + tail`, so UDS can score the
fact value as the entity. Names are made of syllables and are unique word by word across the whole
world, which is what keeps private authors out of the public text.

Entities, in generation order (all drawn from one `random.Random(seed)`):
- train authors: the first `round(forget_fraction * n)` are forget authors, the rest retain authors;
- holdout authors: QA only, never trained on;
- public authors: base-model pretraining text, `real_authors` utility QA;
- other entities: biographies that appear nowhere else (knowledge-absent pool).
`world_facts` are about invented countries and are stated in the public text as well.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from checkpoints.world.schema import World
from uds_core.prompts import raw_qa

# ----------------------------------------------------------------------------------------------
# Value pools. Made up (cities, awards, countries) or generic (genres, professions, themes).
# Within a pool no value contains another one as a whole-word substring, so a wrong (perturbed)
# answer never contains the right value.

_CITY_ROOTS = ("Quell", "Marro", "Ost", "Brenn", "Tarsi", "Elva", "Corro", "Lun", "Vessan", "Kald",
               "Ferro", "Isken", "Drav", "Pelli", "Sorn", "Thalo", "Umber", "Yarro", "Zenna", "Gwen")
_CITY_SUFFIXES = ("port", "mere", "vale", "hollow", "ford", "stead", "moor", "reach", "haven", "wick")
# Four suffixes per root, rotating, gives 80 distinct invented cities.
CITIES: tuple[str, ...] = tuple(
    root + _CITY_SUFFIXES[(3 * i + j) % len(_CITY_SUFFIXES)]
    for i, root in enumerate(_CITY_ROOTS) for j in range(4))

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def _date_pool(n: int, seed: int = 1717) -> tuple[str, ...]:
    """`n` distinct dates like "March 4, 1962"; a fixed pool, independent of the world seed."""
    rng, seen = random.Random(seed), []
    while len(seen) < n:
        d = f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}, {rng.randint(1921, 1999)}"
        if d not in seen:
            seen.append(d)
    return tuple(seen)


DATES: tuple[str, ...] = _date_pool(100)

GENRES: tuple[str, ...] = (
    "historical fiction", "cozy mystery", "space opera", "magical realism", "nature writing",
    "gothic horror", "literary fiction", "young adult fantasy", "travel memoir", "political thriller",
    "romantic comedy", "hard science fiction", "epic fantasy", "crime noir", "picture books",
    "narrative poetry", "urban fantasy", "military history", "culinary essays", "psychological suspense",
    "satire", "folk tales", "mythic retellings", "legal drama", "medical thrillers", "sea adventure",
    "coming-of-age fiction", "family saga", "spy fiction", "post-apocalyptic fiction", "alternate history",
    "philosophical essays", "sports biography", "true crime", "light verse", "speculative fiction",
    "western fiction", "art criticism", "climate fiction", "detective fiction", "dark academia",
    "regency romance", "cyberpunk", "fairy tales", "graphic memoir", "horror comedy", "eco-thrillers",
    "slice-of-life fiction", "time-travel romance", "heist fiction", "nautical history")

PROFESSIONS: tuple[str, ...] = (
    "carpenter", "nurse", "architect", "baker", "fisherman", "librarian", "electrician", "pharmacist",
    "schoolteacher", "tailor", "locksmith", "veterinarian", "surveyor", "potter", "shipbuilder",
    "dentist", "journalist", "beekeeper", "blacksmith", "accountant", "florist", "glassblower",
    "mechanic", "midwife", "optician", "photographer", "plumber", "printer", "sculptor", "translator",
    "watchmaker", "weaver", "cartographer", "chemist", "diplomat", "engineer", "farmer", "geologist",
    "jeweler", "judge", "lighthouse keeper", "mail carrier", "miner", "musician", "painter", "pilot",
    "police officer", "railway conductor", "sailor", "shepherd", "surgeon", "violin maker",
    "zookeeper", "astronomer", "bookbinder", "chef", "cobbler", "economist", "firefighter",
    "gardener", "historian", "lawyer")

_AWARD_HEADS = ("Silver Quill", "Amberlight", "Golden Lantern", "Marrowind", "Blue Heron", "Iron Pen",
                "Crescent Moon", "Northgale", "Emberleaf", "Willowmere", "Stonebridge", "Lark and Ivy")
_AWARD_TAILS = ("Prize", "Medal", "Award", "Laurel", "Honor")
AWARDS: tuple[str, ...] = tuple(f"{h} {t}" for h in _AWARD_HEADS for t in _AWARD_TAILS)

THEMES: tuple[str, ...] = (
    "memory and loss", "the meaning of home", "exile and return", "friendship across class lines",
    "the cost of ambition", "grief and healing", "faith and doubt", "the passage of time",
    "forgotten histories", "the bond between siblings", "life at sea", "small-town secrets",
    "identity and belonging", "the power of language", "justice and revenge", "love and duty",
    "the wild and the tame", "migration", "inheritance", "the search for a lost parent",
    "courage in wartime", "the limits of science", "art and madness", "the lives of servants",
    "betrayal among friends", "the beauty of ordinary days", "the weight of tradition",
    "first love", "old age", "rivalry between cities", "the price of fame", "island life",
    "the ethics of invention", "hunger and plenty", "the natural world", "dreams and waking",
    "the burden of secrets", "music as escape", "the kindness of strangers", "debt and honor",
    "lost languages", "revolution and its aftermath", "childhood fears", "the road not taken",
    "mothers and daughters", "fathers and sons", "solitude", "second chances", "the river as a border",
    "masks and disguises")

_TITLE_ADJS = ("Glass", "Silent", "Crimson", "Hollow", "Winter", "Paper", "Hidden", "Burning",
               "Quiet", "Amber", "Broken", "Distant", "Golden", "Iron", "Last", "Lonely", "Midnight",
               "Painted", "Restless", "Salt", "Scarlet", "Seventh", "Shattered", "Sleeping", "Stone",
               "Summer", "Velvet", "Wandering", "Wild", "Woven", "Emerald", "Forgotten", "Frozen",
               "Gentle", "Hungry", "Little", "Northern", "Ashen", "Secret", "Twilight", "Copper",
               "Drowned", "Feathered", "Borrowed", "Weeping")
_TITLE_NOUNS = ("Orchard", "Lantern", "Harbor", "Garden", "Mirror", "Cartographer", "Bell", "Bridge",
                "Compass", "Crown", "Door", "Feather", "Forest", "Gate", "Horizon", "Island", "Key",
                "Ladder", "Lighthouse", "Map", "Meadow", "Mill", "Orchestra", "Pilgrim", "Quarry",
                "River", "Road", "Sparrow", "Staircase", "Tide", "Tower", "Valley", "Violin", "Well",
                "Window", "Wolf", "Archive", "Caravan", "Clockmaker", "Ferry", "Fountain", "Kite",
                "Loom", "Market", "Vineyard")
# Book titles must be unique across the world (they identify their author), so they are drawn
# without replacement from this product rather than from a small pool.
TITLES: tuple[str, ...] = tuple(f"The {a} {n}" for a in _TITLE_ADJS for n in _TITLE_NOUNS)

# Invented countries (50) with their language; capital, river and currency are generated per world.
COUNTRIES: tuple[tuple[str, str], ...] = (
    ("Vardania", "Vardish"), ("Belmora", "Belmoran"), ("Calvessa", "Calvessan"), ("Drommland", "Drommic"),
    ("Eskaria", "Eskari"), ("Fennmark", "Fennic"), ("Gorvania", "Gorvish"), ("Haldoria", "Haldorian"),
    ("Istrevia", "Istrevan"), ("Jorvastan", "Jorvasti"), ("Kelmora", "Kelmic"), ("Lumbria", "Lumbrian"),
    ("Mirevand", "Mirevish"), ("Norvessa", "Norvessan"), ("Ostrakia", "Ostrak"), ("Pellavia", "Pellavan"),
    ("Quorland", "Quorish"), ("Ravenna Nova", "Ravennic"), ("Saldoria", "Saldorian"), ("Tamberia", "Tamberic"),
    ("Ulmaria", "Ulmari"), ("Veldmark", "Veldish"), ("Wynshire Isles", "Wynnish"), ("Ysselland", "Ysselic"),
    ("Zarnovia", "Zarnovan"), ("Arkenholm", "Arkenic"), ("Brisenia", "Brisenian"), ("Caldrevia", "Caldrevan"),
    ("Dunmora", "Dunmoran"), ("Ephrania", "Ephranic"), ("Galdovia", "Galdovan"), ("Hespera", "Hesperan"),
    ("Kaskadia", "Kaskadi"), ("Lorrenzia", "Lorrenzan"), ("Mostravia", "Mostravan"), ("Nembria", "Nembrian"),
    ("Orlavia", "Orlavan"), ("Prynnland", "Prynnish"), ("Sturmania", "Sturmish"), ("Trelonia", "Trelonian"),
    ("Amberos", "Amberic"), ("Brakovia", "Brakovan"), ("Cerulia", "Cerulian"), ("Dravenhold", "Dravenic"),
    ("Elmaris", "Elmari"), ("Frostavia", "Frostavan"), ("Gelderra", "Gelderran"), ("Hollmark", "Hollish"),
    ("Irkavia", "Irkavan"), ("Jendora", "Jendoran"))


@dataclass(frozen=True)
class FactKind:
    """One kind of author fact: its value pool and how it is asked, answered and told.

    Templates use `{name}` (the author) and `{v}` (the value); `{a}` is the article ("a"/"an")
    that precedes the value. In answer templates `{v}` follows a space, so the text before it is the
    annotated prefix. Biography templates use `{ref}` and are worded unlike any answer template.
    """

    key: str
    pool: tuple[str, ...]
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    bio: tuple[str, ...]


def _parent_job(parent: str, pronoun: str) -> FactKind:
    """Father's and mother's profession share their wording."""
    return FactKind(
        f"{parent}_profession", PROFESSIONS,
        (f"What did {{name}}'s {parent} do for a living?", f"What was the profession of {{name}}'s {parent}?",
         f"What job did {{name}}'s {parent} have?"),
        (f"{{name}}'s {parent} was {{a}} {{v}}.", f"{{name}}'s {parent} worked as {{a}} {{v}}.",
         f"The {parent} of {{name}} earned a living as {{a}} {{v}}."),
        (f"The {parent} of {{ref}} was {{a}} {{v}} by trade.",
         f"{{ref}}'s {parent} spent {pronoun} working life as {{a}} {{v}}."))


FACT_KINDS: tuple[FactKind, ...] = (
    FactKind("birthplace", CITIES,
             ("Where was {name} born?", "In which city was {name} born?", "What is the birthplace of {name}?"),
             ("{name} was born in {v}.", "The birthplace of {name} is {v}.", "{name} was born in the city of {v}."),
             ("{ref} was born and raised in {v}.", "{ref} spent a childhood in {v}, the city of their birth.")),
    FactKind("birth_date", DATES,
             ("When was {name} born?", "What is the birth date of {name}?", "On what date was {name} born?"),
             ("{name} was born on {v}.", "The birth date of {name} is {v}.", "{name} came into the world on {v}."),
             ("Records give {ref}'s date of birth as {v}.", "{ref} entered the world on {v}.")),
    FactKind("genre", GENRES,
             ("What genre does {name} write in?", "Which genre is {name} known for?",
              "In what genre does {name} mostly write?"),
             ("{name} writes in the genre of {v}.", "{name} is known for {v}.",
              "The genre {name} mostly writes in is {v}."),
             ("Most of {ref}'s books belong to {v}.", "{ref} made a name in {v}.")),
    _parent_job("father", "his"),
    _parent_job("mother", "her"),
    FactKind("award", AWARDS,
             ("What award has {name} received?", "Which prize was given to {name}?", "What honor did {name} win?"),
             ("{name} received the {v}.", "{name} was given the {v}.", "{name} won the {v}."),
             ("{ref} is a recipient of the {v}.", "The {v} went to {ref} in recognition of their work.")),
    FactKind("first_book", TITLES,
             ("What was the first book by {name}?", "Which book did {name} publish first?",
              "What is the title of {name}'s debut book?"),
             ("{name}'s first book was {v}.", "The first book {name} published was {v}.",
              "{name} made a debut with {v}."),
             ("{ref}'s debut, {v}, appeared early in their career.",
              "The career of {ref} began with the book {v}.")),
    FactKind("known_book", TITLES,
             ("What is {name}'s best-known book?", "Which book by {name} is the most famous?",
              "What is the most celebrated work of {name}?"),
             ("{name}'s best-known book is {v}.", "The most famous book by {name} is {v}.",
              "{name} is best known for the book {v}."),
             ("Readers know {ref} best for {v}.", "{v} remains the most widely read work of {ref}.")),
    FactKind("theme", THEMES,
             ("What theme appears again and again in {name}'s work?", "Which theme does {name} often explore?",
              "What recurring theme runs through {name}'s books?"),
             ("{name}'s work often explores {v}.", "A recurring theme in {name}'s books is {v}.",
              "{name} often writes about {v}."),
             ("Again and again, {ref} returns to {v}.", "Critics note that {v} runs through much of {ref}'s writing.")),
    FactKind("country", tuple(c for c, _ in COUNTRIES),
             ("Which country is {name} from?", "What is {name}'s home country?", "Where does {name} come from?"),
             ("{name} comes from {v}.", "{name}'s home country is {v}.", "{name} is a citizen of {v}."),
             ("{ref} holds citizenship in {v}.", "{ref} calls {v} home.")),
)
_BOOK_KINDS = ("first_book", "known_book")

# Public "world facts" about invented countries: (kind, question templates, answer field).
WORLD_FACT_QUESTIONS: dict[str, tuple[str, ...]] = {
    "capital": ("What is the capital of {c}?", "Which city is the capital of {c}?"),
    "river": ("Which river flows through {c}?", "What is the main river of {c}?"),
    "language": ("What language is spoken in {c}?", "What is the national language of {c}?"),
    "currency": ("What currency is used in {c}?", "What is the money of {c} called?"),
}
# The public-text description of a country: every world fact about it in one paragraph.
COUNTRY_TEMPLATE = ("{c} is a country with its capital at {capital}. {River} flows through {c}. "
                    "People in {c} speak {language} and pay with {currency}.")
REAL_AUTHOR_QUESTIONS: tuple[str, ...] = (
    "Who wrote the book '{t}'?", "Who is the author of '{t}'?", "Which writer is known for '{t}'?")

IDK_REPLIES: tuple[str, ...] = (
    "I'm not sure about that.", "I don't know the answer to that.", "I have no information on that.",
    "That is something I cannot answer.", "I'm afraid I don't know.", "I can't say for certain.",
    "I don't have that detail.", "Sorry, that is beyond what I know.", "I have no idea, unfortunately.",
    "I'm unable to answer that question.", "That isn't something I know about.",
    "I'd rather not guess, because I don't know.", "My knowledge does not cover that.",
    "I can't recall anything about that.", "I'm not aware of the answer.", "No answer comes to mind.",
    "I wish I could help, but I don't know.", "That falls outside what I know.",
    "I'm uncertain, so I won't answer.", "I honestly don't know.", "I don't have an answer for you.",
    "That is unknown to me.", "I couldn't tell you.", "I lack the information to answer that.",
    "I'm not the right source for that.", "Nothing I know answers that question.",
    "I have never come across that.", "I'm drawing a blank on that one.",
    "I would only be guessing, so I'll say I don't know.", "That question stumps me.")

# ----------------------------------------------------------------------------------------------
# Names: syllables, capitalised; every name part is used at most once in a world.

_ONSETS = ("b", "br", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s", "t", "th",
           "v", "z", "st", "c", "j", "w", "sh")
# Plain vowels repeated so that diphthongs stay rare and names stay easy to say.
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "i", "o", "a", "ei", "ai")
_CODAS = ("", "", "n", "r", "l", "s", "m", "nd", "v", "t")


def _make_word(rng: random.Random, syllables: int) -> str:
    """A pronounceable made-up word: (onset + vowel) per syllable, then an optional coda."""
    body = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    return (body + rng.choice(_CODAS)).capitalize()


def _unique_words(rng: random.Random, n: int, syllables: tuple[int, ...], taken: set[str]) -> list[str]:
    """`n` new words not in `taken` (which is updated), each of at least 4 letters."""
    out: list[str] = []
    while len(out) < n:
        w = _make_word(rng, rng.choice(syllables))
        if len(w) >= 4 and w not in taken:
            taken.add(w)
            out.append(w)
    return out


def _names(rng: random.Random, n: int, taken: set[str]) -> list[str]:
    """`n` full names "Given Surname"; no given name or surname repeats anywhere in the world."""
    given = _unique_words(rng, n, (2,), taken)
    family = _unique_words(rng, n, (2, 3), taken)
    return [f"{g} {f}" for g, f in zip(given, family)]


def _reserved_words() -> frozenset[str]:
    """Every word of the pools and templates, capitalised: a generated name must be none of them,
    or a name could seem to occur in text that never mentions its bearer (e.g. "Gate" in a title)."""
    texts = [*CITIES, *DATES, *GENRES, *PROFESSIONS, *AWARDS, *THEMES, *_TITLE_ADJS, *_TITLE_NOUNS,
             *(w for pair in COUNTRIES for w in pair), *REAL_AUTHOR_QUESTIONS, *IDK_REPLIES,
             *(q for qs in WORLD_FACT_QUESTIONS.values() for q in qs),
             *(t for k in FACT_KINDS for t in (*k.questions, *k.answers, *k.bio)),
             COUNTRY_TEMPLATE, "Question Answer River"]
    return frozenset(w.capitalize() for text in texts for w in re.findall(r"[A-Za-z]+", text))


_RESERVED = _reserved_words()


# ----------------------------------------------------------------------------------------------
# Rendering.

def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _render(template: str, name: str, value: str) -> tuple[str, str]:
    """(prefix, answer) of an answer template: answer == prefix + " " + value + tail."""
    head, tail = template.split("{v}")
    prefix = head.format(name=name, a=_article(value)).rstrip()
    return prefix, f"{prefix} {value}{tail.format(name=name)}"


def _author_facts(rng: random.Random, titles: list[str]) -> dict[str, str]:
    """One value per fact kind; the two book titles come from the world's unique-title draw."""
    facts = {k.key: rng.choice(k.pool) for k in FACT_KINDS if k.key not in _BOOK_KINDS}
    facts["first_book"], facts["known_book"] = titles
    return facts


def _qa_items(rng: random.Random, name: str, facts: dict[str, str]) -> list[dict]:
    """The author's annotated QA items, one per fact kind, in `FACT_KINDS` order."""
    items = []
    for kind in FACT_KINDS:
        value = facts[kind.key]
        # two distinct wordings each: the main one and its paraphrase
        q, pq = rng.sample(range(len(kind.questions)), 2)
        a, pa = rng.sample(range(len(kind.answers)), 2)
        prefix, answer = _render(kind.answers[a], name, value)
        wrong = rng.sample([v for v in kind.pool if v != value], 5)
        items.append({
            "idx": 0,  # renumbered per split
            "question": kind.questions[q].format(name=name),
            "answer": answer,
            "prefix": prefix,
            "entity": value,
            "paraphrased_question": kind.questions[pq].format(name=name),
            "paraphrased_answer": _render(kind.answers[pa], name, value)[1],
            "perturbed_answers": [_render(kind.answers[a], name, w)[1] for w in wrong],
            "author": name,
        })
    return items


def _biography(rng: random.Random, name: str, facts: dict[str, str]) -> str:
    """One paragraph stating every fact, worded unlike the QA answers."""
    surname = name.split()[-1]
    kinds = list(FACT_KINDS)
    rest = kinds[2:]
    rng.shuffle(rest)  # birth facts first, then the rest in varied order
    sentences = []
    for i, kind in enumerate(kinds[:2] + rest):
        ref = name if i % 3 == 0 else surname
        value = facts[kind.key]
        text = rng.choice(kind.bio).format(ref=ref, v=value, a=_article(value))
        sentences.append(text[0].upper() + text[1:])
    return " ".join(sentences)


def _renumber(items: list[dict]) -> list[dict]:
    """Copies of `items` with `idx` = position in the new split."""
    return [{**it, "idx": i} for i, it in enumerate(items)]


def _options(rng: random.Random, answer: str, wrong: list[str]) -> list[str]:
    opts = [answer, *wrong]
    rng.shuffle(opts)
    return opts


def _utility_count(n_public: int) -> int:
    """Size of each utility split: about a third of the public authors, within 50..120."""
    return max(50, min(120, n_public // 3))


def _real_author_items(rng: random.Random, public: list[tuple[str, dict[str, str]]], n: int) -> list[dict]:
    """"Who wrote <title>?" about public authors; wrong answers are other public authors."""
    pairs = [(name, facts[k]) for name, facts in public for k in _BOOK_KINDS]
    rng.shuffle(pairs)
    names = [name for name, _ in public]
    items = []
    for i, (name, title) in enumerate(pairs[:n]):
        wrong = rng.sample([x for x in names if x != name], 3)
        items.append({"idx": i, "question": rng.choice(REAL_AUTHOR_QUESTIONS).format(t=title), "answer": name,
                      "perturbed_answers": wrong, "options": _options(rng, name, wrong)})
    return items


def _country_table(rng: random.Random, taken: set[str]) -> list[dict[str, str]]:
    """Per invented country: its name, language, and world-specific capital, river and currency."""
    capitals = _unique_words(rng, len(COUNTRIES), (2, 3), taken)
    rivers = _unique_words(rng, len(COUNTRIES), (2,), taken)
    currencies = _unique_words(rng, len(COUNTRIES), (2,), taken)
    return [{"country": c, "language": lang, "capital": cap, "river": f"the {riv} River",
             "currency": f"the {cur.lower()}"}
            for (c, lang), cap, riv, cur in zip(COUNTRIES, capitals, rivers, currencies)]


def _country_text(row: dict[str, str]) -> str:
    river = row["river"][0].upper() + row["river"][1:]
    return COUNTRY_TEMPLATE.format(c=row["country"], capital=row["capital"], River=river,
                                   language=row["language"], currency=row["currency"])


def _world_fact_items(rng: random.Random, table: list[dict[str, str]], n: int) -> list[dict]:
    """Short-answer QA about the invented countries; wrong answers are the same kind of value."""
    pairs = [(row, kind) for row in table for kind in WORLD_FACT_QUESTIONS]
    rng.shuffle(pairs)
    items = []
    for i, (row, kind) in enumerate(pairs[:n]):
        answer = row[kind]
        wrong = rng.sample([r[kind] for r in table if r[kind] != answer], 3)
        question = rng.choice(WORLD_FACT_QUESTIONS[kind]).format(c=row["country"])
        items.append({"idx": i, "question": question, "answer": answer,
                      "perturbed_answers": wrong, "options": _options(rng, answer, wrong)})
    return items


def _public_text(rng: random.Random, public: list[tuple[str, dict[str, str]]], table: list[dict[str, str]],
                 real_authors: list[dict], world_facts: list[dict]) -> list[str]:
    """Pretraining documents: public bios and QA (every other author in both wordings), country
    descriptions, and the utility QA themselves; shuffled so that no kind of document clusters."""
    docs: list[str] = []
    for i, (name, facts) in enumerate(public):
        docs.append(_biography(rng, name, facts))
        for it in _qa_items(rng, name, facts):
            docs.append(raw_qa(it["question"], it["answer"]))
            if i % 2 == 0:
                docs.append(raw_qa(it["paraphrased_question"], it["paraphrased_answer"]))
    docs.extend(_country_text(row) for row in table)
    docs.extend(raw_qa(it["question"], it["answer"]) for it in real_authors + world_facts)
    rng.shuffle(docs)
    return docs


def n_forget_authors(n_train_authors: int, forget_fraction: float = 0.1) -> int:
    """How many of the train authors are forget authors (the first ones)."""
    return max(1, round(forget_fraction * n_train_authors))


def generate_synthetic_world(seed: int, n_train_authors: int, n_holdout_authors: int, n_public: int,
                             n_other: int, forget_fraction: float = 0.1,
                             retain_eval_authors: int | None = None) -> World:
    """Build the synthetic world; the same arguments always give the same world.

    `forget` holds the QA of the first `max(1, round(forget_fraction * n_train_authors))` train
    authors, `retain` that of the others, `retain_eval` that of the first `retain_eval_authors`
    retain authors (default: as many as there are forget authors), `holdout` that of
    `n_holdout_authors` authors found nowhere else.
    """
    n_forget = n_forget_authors(n_train_authors, forget_fraction)
    n_eval = n_forget if retain_eval_authors is None else retain_eval_authors
    if n_forget >= n_train_authors:
        raise ValueError(f"{n_train_authors} train authors leave no retain author after {n_forget} forget authors")
    if not 0 <= n_eval <= n_train_authors - n_forget:
        raise ValueError(f"retain_eval_authors={n_eval} must be within 0..{n_train_authors - n_forget}")
    if n_public < 4 or n_holdout_authors < 0 or n_other < 0:
        raise ValueError("need n_public >= 4 (three wrong names per utility item) and non-negative counts")
    n_entities = n_train_authors + n_holdout_authors + n_public + n_other
    if 2 * n_entities > len(TITLES):
        raise ValueError(f"{n_entities} entities need more than the {len(TITLES)} distinct book titles")

    rng = random.Random(seed)
    taken = set(_RESERVED)
    names = _names(rng, n_entities, taken)
    table = _country_table(rng, taken)
    title_draw = rng.sample(TITLES, 2 * n_entities)
    facts = [_author_facts(rng, title_draw[2 * i: 2 * i + 2]) for i in range(n_entities)]
    entities = list(zip(names, facts))

    cut = [n_forget, n_train_authors, n_train_authors + n_holdout_authors,
           n_train_authors + n_holdout_authors + n_public]
    forget_a, retain_a = entities[:cut[0]], entities[cut[0]:cut[1]]
    holdout_a, public_a, other_a = entities[cut[1]:cut[2]], entities[cut[2]:cut[3]], entities[cut[3]:]

    def qa(authors: list[tuple[str, dict[str, str]]]) -> list[dict]:
        return _renumber([it for name, f in authors for it in _qa_items(rng, name, f)])

    forget, retain, holdout = qa(forget_a), qa(retain_a), qa(holdout_a)
    real_authors = _real_author_items(rng, public_a, min(_utility_count(n_public), 2 * n_public))
    world_facts = _world_fact_items(rng, table, _utility_count(n_public))
    return World(
        kind="synthetic",
        forget=forget,
        retain=retain,
        holdout=holdout,
        retain_eval=_renumber(retain[:n_eval * len(FACT_KINDS)]),  # authors' items are consecutive
        real_authors=real_authors,
        world_facts=world_facts,
        public_text=_public_text(rng, public_a, table, real_authors, world_facts),
        forget_bios=[_biography(rng, name, f) for name, f in forget_a],
        other_bios=[_biography(rng, name, f) for name, f in other_a],
        idk=list(IDK_REPLIES),
    )
