"""Reading a long passage whole: the cross-encoder reads at most `max_length` word pieces of a claim and a passage
together, so a passage longer than that is read in windows of whole sentences that each fit beside the claim
(consecutive windows share one sentence, so two sentences that belong together are read together at least once),
and the most decisive window (the least not-enough-information) speaks for the passage.

Without it the end of a long passage (an index chunk of 120 words, a web page, an abstract) was cut off unread.
"""

from __future__ import annotations

from collections.abc import Callable

SPECIAL_TOKENS = 3  # [CLS] claim [SEP] passage [SEP]
MIN_BUDGET = 32  # word pieces left for the passage below which windows would be too short to mean anything


def token_counter(tok) -> Callable[[str], int]:
    """A text's word pieces by a Hugging Face tokenizer, without special tokens (a text past the model's 512
    pieces is counted, not read: no warning)."""

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False, verbose=False)["input_ids"])

    return count


def windows(
    claim_tokens: int,
    text: str,
    count: Callable[[str], int],
    max_length: int,
    split: Callable[[str], list[str]] | None = None,
) -> list[str]:
    """`text` as it is when it fits beside a claim of `claim_tokens` word pieces, else windows of its sentences.

    `count` gives a text's word pieces (without special tokens). A sentence longer than a window is a window of its
    own (and is cut where it does not fit, as before). With a claim so long that under MIN_BUDGET word pieces are
    left, the passage is read as it is (the claim and the passage are both cut).
    """
    budget = max_length - claim_tokens - SPECIAL_TOKENS
    if budget < MIN_BUDGET or count(text) <= budget:
        return [text]
    if split is None:
        from ..claims.sentences import split_sentences as split
    sentences = split(text) or [text]
    if len(sentences) == 1:
        return [text]
    return [" ".join(sentences[a:b]) for a, b in groups([count(s) for s in sentences], budget)]


def groups(sizes: list[int], budget: int) -> list[tuple[int, int]]:
    """Consecutive runs [a, b) of items of `sizes` word pieces, each run within `budget` (an item longer than it is a
    run of its own), the next run starting on the last item of the one before."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < len(sizes):
        end, used = start, 0
        while end < len(sizes) and (end == start or used + sizes[end] <= budget):
            used += sizes[end]
            end += 1
        out.append((start, end))
        if end >= len(sizes):
            break
        start = max(end - 1, start + 1)  # the next window starts on this one's last sentence
    return out


def part_spans(text: str, count: Callable[[str], int], budget: int) -> list[tuple[int, int]]:
    """A document cut into parts for grounding (verify/grounding.py): spans [start, end) of runs of its whole
    sentences, each within `budget` word pieces and overlapping by one sentence, so that every sentence is read and
    two that belong together are read together at least once; [] for a text with no words."""
    from ..claims.sentences import sentence_spans

    segments = sentence_spans(text)
    return [(segments[a].start, segments[b - 1].end) for a, b in groups([count(s.text) for s in segments], budget)]
