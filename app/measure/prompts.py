"""Non-repeating prompts, generated deterministically from a seed.

Each prompt asks for open-ended prose long enough to reach ``--max-tokens``. Prompts are assembled from
short pieces (no piece is as long as the n-gram the check uses), and a candidate that shares an
``NGRAM``-word sequence with any prompt already chosen (or with a text the caller reserves, such as the
repeat-test prompt) is drawn again. The same seed and count give the same prompts on every machine;
:func:`prompt_set_sha256` is what a measurement records.
"""

from __future__ import annotations

import hashlib
import json
import random
import re

NGRAM = 8  # two prompts may not share a sequence of this many words
_WORD = re.compile(r"[a-z0-9']+")

SUBJECTS = """a lighthouse keeper|a retired violin maker|a beekeeper|a night-shift nurse|a cartographer|a glassblower|
a ferry captain|a village baker|a young astronomer|a locksmith|a field geologist|a chess teacher|a tailor|
a mountain guide|a radio operator|a clockmaker|a marine biologist|a librarian|a potter|a train conductor|
a street musician|an orchard farmer|a bridge engineer|a translator|a bookbinder|a fire lookout|a weaver|
a court stenographer|a museum guard|a sheep farmer|a puppeteer|a lock keeper|a typesetter|a surveyor|
a snowplow driver|a cheesemaker|a tea merchant|a falconer|a shipwright|a piano tuner|a rope maker|
a kite designer|a monk who keeps bees|a park ranger|a census taker|a stonemason|a cook on a cargo ship|
a hot-air balloon pilot|a perfumer|a mapmaker's apprentice|a bicycle courier|a lamp lighter|a diver|
a wind farm technician|a violin student|a dairy inspector|a botanist|a salt harvester|a blacksmith""".split("|")
PLACES = """on a foggy northern coast|in a desert mining town|during a long winter|in a flooded river valley|
on a small volcanic island|at the edge of a glacier|on a slow river barge|in a mountain monastery|
during a summer drought|in a busy harbour market|in a town with no electricity|on a research station|
in a village famous for its clocks|during a week of heavy snow|on a high plateau|in an old railway town|
in a forest after a storm|on the night of a solar eclipse|in a quiet university library|in a fishing village|
beside a frozen lake|in a crowded port city|during the grape harvest|in a town built on stilts|
at the top of a lighthouse|on a ship crossing the equator|in a valley of windmills|in a city of canals|
at a lantern festival|in a remote weather station|on an island of goats|in a border town""".split("|")
ANGLES = """what they notice each morning|a mistake they cannot undo|the letter they never sent|
an unexpected visitor|a skill they are slowly losing|a disagreement with a neighbour|the tools they rely on|
a promise made years ago|the sounds of their working day|a stranger asking for help|a choice between two jobs|
the day the power failed|an old photograph they find|a lesson from a former teacher|a storm that changes plans|
what they cook for friends|a rumour in the town|a map with a missing road|the last day of the season|
a debt that must be repaid|a journey on foot|a child who asks many questions|a secret recipe|a lost animal|
a broken instrument|an argument about the weather|the first snow of the year|a letter from abroad""".split("|")
FORMS = ["Write a long story about", "Tell, in slow detail, the tale of", "Compose a vivid narrative about",
         "Describe a week in the life of", "Narrate the long account of",
         "Write a detailed, unhurried chapter about", "Please write extended prose about",
         "Spin a rich and patient story about", "Give a lengthy fictional account of",
         "In flowing paragraphs, write about"]
FOCUS = ["Dwell on", "Pay close attention to", "Give plenty of room to", "Keep returning to",
         "Let the story turn on", "Build the telling around", "Linger over", "Centre everything on"]
LENGTH = ["Keep going for many paragraphs.", "Write at length; never stop early.",
          "Make it several pages long.", "Aim for well over a thousand words.",
          "Use many long paragraphs.", "Do not summarise; tell it fully.",
          "Continue for as long as you can.", "Be expansive and thorough."]
STYLE = ["Plain English prose only.", "No lists, no headings.", "Use ordinary sentences.",
         "Write in the past tense.", "Write in the present tense.", "Avoid dialogue mostly.",
         "Include some dialogue.", "Keep a calm, even tone."]


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def shingles(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


class PromptError(ValueError):
    pass


def generate(n: int, seed: int = 0, *, reserved: list[str] = (), attempts: int = 400) -> list[str]:
    """``n`` prompts from ``seed``; none shares an ``NGRAM``-word sequence with another or with
    ``reserved``. Raises PromptError when the pieces cannot give that many (ask for fewer)."""
    if n < 0:
        raise PromptError("the number of prompts must be 0 or more")
    rng = random.Random(f"caveat-measure-prompts:{seed}")
    seen: set[tuple[str, ...]] = set()
    for text in reserved:
        seen |= shingles(text)
    out: list[str] = []
    for _ in range(n):  # every piece is shorter than NGRAM words, so a shared n-gram spans two pieces
        for _try in range(attempts):
            p = (f"{rng.choice(FORMS)} {rng.choice(SUBJECTS).strip()} {rng.choice(PLACES).strip()}. "
                 f"{rng.choice(FOCUS)} {rng.choice(ANGLES).strip()}. {rng.choice(LENGTH)} {rng.choice(STYLE)}")
            sh = shingles(p)
            if not (sh & seen):
                seen |= sh
                out.append(p)
                break
        else:
            raise PromptError(f"could not build {n} prompts that share no {NGRAM}-word sequence "
                              f"(built {len(out)}); ask for fewer with --prompts")
    return out


def shared_ngrams(texts: list[str], n: int = NGRAM) -> list[tuple[int, int, str]]:
    """Pairs of texts (i, j, the n-gram) that share an ``n``-word sequence; empty when none do."""
    found = []
    sets = [shingles(t, n) for t in texts]
    for i in range(len(sets)):
        for j in range(i + 1, len(sets)):
            common = sets[i] & sets[j]
            if common:
                found.append((i, j, " ".join(sorted(common)[0])))
    return found


def prompt_set_sha256(prompts: list[str]) -> str:
    """sha256 of the prompt set as sent: the JSON array of the prompts, in order, UTF-8, no spaces."""
    return hashlib.sha256(json.dumps(list(prompts), ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()
