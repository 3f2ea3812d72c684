"""Corpus, byte-level BPE tokenizers and chat templates of make_model_fixtures.py's checkpoints.

Imported by make_model_fixtures.py, which sets the determinism environment variables before
anything imports tokenizers. See scripts/reference/README.md ("Tokenizers", "Where the chat
templates live").
"""

from __future__ import annotations

import random

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

VOCAB_SIZE = 384
CORPUS_SEED = 1234

# --------------------------------------------------------------------------------------
# Chat templates
# --------------------------------------------------------------------------------------

# Llama-3-like: bos_token once at the start, a header per role, content trimmed, eos_token
# closing each turn (Llama 3 uses <|start_header_id|>/<|eot_id|>; we only have <s>/</s>).
LLAMA_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% set content = '<|' + message['role'] + '|>\\n\\n' + message['content'] | trim + eos_token %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n\\n' }}{% endif %}"
)

# Verbatim the ChatML template of Qwen2-*-Instruct (default system message when none is given).
QWEN2_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# --------------------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------------------


def make_corpus(n_lines: int = 480) -> list[str]:
    rng = random.Random(CORPUS_SEED)
    subjects = ["The cat", "The dog", "A robot", "The baker", "My friend", "The teacher", "A child",
                "The old man", "The scientist", "Our neighbour", "The bird", "Anna", "Luca"]
    verbs = ["walks", "sleeps", "reads", "sings", "runs", "drinks coffee", "eats bread", "writes code",
             "plays", "looks", "waits", "thinks", "travels", "works"]
    places = ["in the park", "at the café", "in Zürich", "near the river", "in the garden",
              "at home", "in the kitchen", "on the train", "in São Paulo", "at the station", "in the city"]
    times = ["today", "every morning", "at night", "on Sunday", "in the evening", "once upon a time",
             "yesterday", "tomorrow", "sometimes"]
    adjectives = ["sunny", "cold", "warm", "rainy", "windy", "quiet", "naïve", "happy", "tired", "busy"]
    weather = ["The weather today is {a}.", "It is {a} and {b} in {p}.", "Tomorrow will be {a}, they say.",
               "The sky over {p} is {a} today."]
    emojis = ["🙂", "☕", "🚀", "🌧", "😀"]
    out: list[str] = []
    for i in range(n_lines):
        kind = i % 8
        if kind == 0:
            out.append(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(places)} {rng.choice(times)}.")
        elif kind == 1:
            t = rng.choice(weather)
            out.append(t.format(a=rng.choice(adjectives), b=rng.choice(adjectives),
                                p=rng.choice(places).split(" ", 1)[1]))
        elif kind == 2:
            a, b = rng.randint(0, 99), rng.randint(0, 99)
            out.append(f"Question: what is {a} plus {b}?\nAnswer: {a + b}")
        elif kind == 3:
            nums = ", ".join(str(rng.randint(0, 1000)) for _ in range(rng.randint(2, 5)))
            out.append(f"Numbers: {nums} and {rng.randint(0, 9)}.{rng.randint(0, 99):02d}!")
        elif kind == 4:
            out.append(f"Once upon a time {rng.choice(places)}, {rng.choice(subjects).lower()} "
                       f"{rng.choice(verbs)} and was {rng.choice(adjectives)}.")
        elif kind == 5:
            out.append(f"{rng.choice(subjects)} says: \"I love {rng.choice(['coffee', 'tea', 'bread', 'music'])} "
                       f"{rng.choice(emojis)}\" — déjà vu?")
        elif kind == 6:
            out.append(f"def f(x):\n    return x * {rng.randint(1, 9)} + {rng.randint(0, 9)}  # {rng.choice(adjectives)}")
        else:
            out.append(f"The children play {rng.choice(places)} while their parents "
                       f"{rng.choice(['drink coffee', 'read', 'talk', 'wait'])} {rng.choice(times)}.")
    return out


# --------------------------------------------------------------------------------------
# Tokenizers
# --------------------------------------------------------------------------------------


# Qwen2's pre-tokenizer regex (transformers' Qwen2Tokenizer / Qwen2 tokenizer.json): single digits.
QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def train_bpe(corpus: list[str], vocab_size: int, special_tokens: list[str], qwen_style: bool) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, fuse_unk=False))
    if qwen_style:
        # Exactly what transformers 5's Qwen2Tokenizer rebuilds on load (it ignores the
        # normalizer/pre_tokenizer stored in tokenizer.json for model_type "qwen2"), so that
        # tokenizer.json and transformers agree.
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    else:
        # GPT-2 style byte-level pre-tokenizer (its built-in regex).
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    return tok


def build_llama_tokenizer(corpus: list[str]) -> PreTrainedTokenizerFast:
    # Special tokens first, like Llama 2 (<unk>=0, <s>=1, </s>=2): here <pad>=0, <s>=1, </s>=2.
    tok = train_bpe(corpus, VOCAB_SIZE, ["<pad>", "<s>", "</s>"], qwen_style=False)
    assert tok.token_to_id("<s>") == 1 and tok.token_to_id("</s>") == 2 and tok.token_to_id("<pad>") == 0
    tok.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0",
        pair="<s>:0 $A:0 <s>:1 $B:1",
        special_tokens=[("<s>", 1)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=256,
        clean_up_tokenization_spaces=False,
        chat_template=LLAMA_CHAT_TEMPLATE,
    )


def build_qwen2_tokenizer(corpus: list[str]) -> PreTrainedTokenizerFast:
    # Special tokens at the end of the vocab, like Qwen2 (151643..151645).
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = train_bpe(corpus, VOCAB_SIZE - len(specials), [], qwen_style=True)
    assert tok.get_vocab_size() == VOCAB_SIZE - len(specials), tok.get_vocab_size()
    tok.add_special_tokens(specials)
    # Qwen2's tokenizer.json uses a ByteLevel post-processor (adds nothing, no BOS).
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=["<|im_start|>", "<|im_end|>"],
        model_max_length=256,
        clean_up_tokenization_spaces=False,
        chat_template=QWEN2_CHAT_TEMPLATE,
    )
