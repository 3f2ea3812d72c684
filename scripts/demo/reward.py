"""Python port of pbrl's built-in summary/expansion joint reward.

Must give exactly the same numbers as `apps/cli/src/tasks/summary-expansion.ts`
(`summaryExpansionReward`); `reward_examples.json` (written by `make_demo.py`) holds examples
computed here that the TypeScript unit test checks.

Formula (S = summary of agent 0, E = expansion of agent 1, T = the task text; only the part of a
completion before its first newline counts):

    words(x)    lowercase runs of [a-z0-9] in x
    content(x)  words(x) minus STOPWORDS (kept with repetitions)
    fS = faith(S), fE = faith(E)
                faith(x) = |{w in content(x) : w in words(T)}| / |content(x)|  (0 if content(x) empty)
    cov         = |set(content(E)) & set(content(T))| / |set(content(T))|       (0 if T has none)
    brev        = brevity(|words(S)|, |words(T)|)
                brevity(n, m) = 0 if n == 0 else min(1, n / 3, max(0, 2 - 2 n / m))
                (full credit for 3 <= n <= m/2 words, falling to 0 at n = m: a copy of the text)
    ratio       = 0 if |words(S)| == 0 or |words(E)| == 0
                  else min(1, |words(E)| / (3 |words(S)|))
    R = 0.1 fS + 0.1 fE + 0.2 cov + 0.3 fS brev + 0.3 fS fE ratio           in [0, 1]
"""

from __future__ import annotations

import re

W_FAITH_SUMMARY = 0.1
W_FAITH_EXPANSION = 0.1
W_COVERAGE = 0.2
W_BREVITY = 0.3
W_RATIO = 0.3
TARGET_RATIO = 3.0
MIN_SUMMARY_WORDS = 3

STOPWORDS = frozenset(
    """a an the and or but of to in on at by for with from into onto near over under before after
    while during his her their its our my your he she it they we i you was were is are be been has
    had have that this these those then than as so very also""".split()
)

_WORD = re.compile(r"[a-z0-9]+")


def first_line(s: str) -> str:
    i = s.find("\n")
    return s if i < 0 else s[:i]


def words(s: str) -> list[str]:
    return _WORD.findall(s.lower())


def content_words(s: str) -> list[str]:
    return [w for w in words(s) if w not in STOPWORDS]


def faithfulness(output: str, text: str) -> float:
    c = content_words(output)
    if not c:
        return 0.0
    vocab = set(words(text))
    return sum(1 for w in c if w in vocab) / len(c)


def coverage(expansion: str, text: str) -> float:
    t = set(content_words(text))
    if not t:
        return 0.0
    return len(t & set(content_words(expansion))) / len(t)


def brevity(n: int, m: int) -> float:
    if n == 0 or m == 0:
        return 0.0
    return min(1.0, n / MIN_SUMMARY_WORDS, max(0.0, 2.0 - 2.0 * n / m))


def length_ratio(summary: str, expansion: str) -> float:
    ns, ne = len(words(summary)), len(words(expansion))
    if ns == 0 or ne == 0:
        return 0.0
    return min(1.0, ne / (TARGET_RATIO * ns))


def components(summary: str, expansion: str, text: str) -> dict[str, float]:
    s, e = first_line(summary), first_line(expansion)
    return {
        "faithSummary": faithfulness(s, text),
        "faithExpansion": faithfulness(e, text),
        "coverage": coverage(e, text),
        "brevity": brevity(len(words(s)), len(words(text))),
        "ratio": length_ratio(s, e),
    }


def joint_reward(summary: str, expansion: str, text: str) -> float:
    c = components(summary, expansion, text)
    fs, fe = c["faithSummary"], c["faithExpansion"]
    return (
        W_FAITH_SUMMARY * fs
        + W_FAITH_EXPANSION * fe
        + W_COVERAGE * c["coverage"]
        + W_BREVITY * fs * c["brevity"]
        + W_RATIO * fs * fe * c["ratio"]
    )


def summary_expansion_reward(completions: list[list[str]], text: str) -> list[float]:
    """completions[agent][candidate] -> one joint reward per candidate index."""
    summaries, expansions = completions
    assert len(summaries) == len(expansions)
    return [joint_reward(s, e, text) for s, e in zip(summaries, expansions)]
