"""Greedy decoding of the turns of many sessions, the way an inference engine serves an agent: a session's prompt
is read once, its turns reuse the cache of the tokens they share, turns are batched for the decode steps, and each
answer stops as soon as what is scored is decided.

    decoder = TurnDecoder(model, lanes=16)
    outputs = decoder.run(prompts, limits, stop_ids={eos, end_of_turn, call_closer})
    # prompts: per session, the token ids of each turn's prompt, in order; limits: each turn's most new tokens
    # outputs: per session, per turn, the generated ids (up to and including the stop token)

The turns of a session share their beginning: turn k+1's prompt is mostly turn k's prompt plus the recorded turn
and its tool results. Mostly: Gemma 4 renders the reasoning of an exchange only until the next user message, and a
context cut to max_length drops its oldest turns, so the reuse is computed, never assumed. Each session keeps a
trunk, the cache of the last prompt read; the next prompt crops it to their longest common token prefix and feeds
only the rest (one forward, batch 1). So a session costs about one pass over its tokens instead of one per turn.

Each turn then waits, holding its slice of the trunk, until ``lanes`` turns (of any sessions) are ready; they are
decoded together: their caches are stacked, left-padded to the longest, into buffers with room for every new token
(written in place, not copied per step), with an attention mask over the padding and each row's own position ids;
a row leaves the batch when it meets a stop token or its limit.

Greedy and deterministic: each answer is the one ``generate`` gives for its prompt alone, up to the floating point
differences of a padded batch (a near tie between the two best tokens can break either way; tests compare the two
turn by turn on a trained replica). Works with transformers' and PEFT's causal language models whose forward takes
a ``DynamicCache``; the cache is built without the model's config, so sliding-window layers keep their history and
the attention mask applies the window.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class _Turn:
    """A turn ready to decode: its place, the cache of its prompt (per layer (keys, values), batch 1, or None for a
    layer without a cache of its own), the prompt's length, its first token and its limit."""

    session: int
    turn: int
    layers: list[Any]
    length: int
    first: int
    limit: int


@dataclass
class _Row:
    """A turn in the decode batch: what it generated so far, its row and where its keys begin in the buffers."""

    turn: _Turn
    out: list[int]
    index: int = 0
    start: int = 0


def _buffer_layer_class():
    """A cache layer over preallocated buffers: a decode step writes its keys and values in place."""
    from transformers.cache_utils import DynamicLayer

    class BufferLayer(DynamicLayer):
        def __init__(self, keys, values, length: int):
            super().__init__()
            self.kbuf, self.vbuf, self.n = keys, values, length
            self.device, self.is_initialized = keys.device, True
            self.keys, self.values = keys[..., :length, :], values[..., :length, :]

        def update(self, key_states, value_states, *args, **kwargs):
            add = key_states.shape[-2]
            if self.n + add > self.kbuf.shape[-2]:  # more room (not expected: the buffers hold every limit)
                grow = max(add, self.kbuf.shape[-2])
                pad = (0, 0, 0, grow)
                self.kbuf = self.torch.nn.functional.pad(self.kbuf, pad)
                self.vbuf = self.torch.nn.functional.pad(self.vbuf, pad)
            self.kbuf[..., self.n:self.n + add, :] = key_states
            self.vbuf[..., self.n:self.n + add, :] = value_states
            self.n += add
            self.keys, self.values = self.kbuf[..., :self.n, :], self.vbuf[..., :self.n, :]
            return self.keys, self.values

        def batch_select_indices(self, indices) -> None:
            self.kbuf, self.vbuf = self.kbuf[indices], self.vbuf[indices]
            self.keys, self.values = self.kbuf[..., :self.n, :], self.vbuf[..., :self.n, :]

    class SlidingBufferLayer(BufferLayer):
        """A sliding-window layer over the same buffers: attention reads only the last ``window - 1`` keys before the
        new ones (what the window lets a query see), and the mask sizes say so, as transformers' own sliding layer
        does; the buffers keep the whole history."""

        is_sliding = True

        def __init__(self, keys, values, length: int, window: int):
            super().__init__(keys, values, length)
            self.sliding_window = window

        def update(self, key_states, value_states, *args, **kwargs):
            keys, values = super().update(key_states, value_states)
            visible = self.sliding_window - 1 + key_states.shape[-2]
            return keys[..., -visible:, :], values[..., -visible:, :]

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            before = self.n
            offset = max(before - self.sliding_window + 1, 0)
            return min(before, self.sliding_window - 1) + query_length, offset

        def get_max_length(self) -> int:
            return self.sliding_window

    import torch

    BufferLayer.torch = torch
    return BufferLayer, SlidingBufferLayer


def sliding_windows(model) -> dict[int, int]:
    """{layer index: window} of the model's sliding-window layers, from its (text) config's ``layer_types``."""
    config = model.config
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    window, types = getattr(text, "sliding_window", None), getattr(text, "layer_types", None) or []
    if not window:
        return {}
    return {j: int(window) for j, kind in enumerate(types) if kind == "sliding_attention"}


class TurnDecoder:
    """Greedy decoding of sessions' turns; ``stats`` counts the turns, the prompt tokens and how many of them were
    read from a cache instead of computed, the tokens of a session's last prompt that the next one does not start
    with (dropped from its cache: a token merged across the boundary, reasoning no longer rendered, a context cut
    shorter), the tokens generated and the forward calls."""

    def __init__(self, model, lanes: int = 16):
        import torch

        self.torch, self.model, self.lanes = torch, model, max(1, lanes)
        self.stop_ids: set[int] = set()
        self.on_turn: Any = None
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        params = inspect.signature(base.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"  # transformers >= 5.25 renamed it
        self.keep_arg = "logits_to_keep" in params
        self.device = next(model.parameters()).device
        self.buffer_layer, self.sliding_layer = _buffer_layer_class()
        self.windows = sliding_windows(base)
        self.stats = {"turns": 0, "prompt_tokens": 0, "reused_tokens": 0, "trunk_dropped": 0, "generated_tokens": 0,
                      "forward_calls": 0}

    # --- the model ---

    def _forward(self, ids, cache, attention, positions):
        kwargs = {self.cache_arg: cache, "use_cache": True, "attention_mask": attention, "position_ids": positions}
        if self.keep_arg:
            kwargs["logits_to_keep"] = 1
        self.stats["forward_calls"] += 1
        with self.torch.no_grad():
            return self.model(input_ids=ids, **kwargs).logits[:, -1, :].float()

    @staticmethod
    def _layers(cache) -> list:
        return [(layer.keys, layer.values) if getattr(layer, "is_initialized", False) and layer.keys.numel() else None
                for layer in cache.layers]

    # --- a session's trunk ---

    def _read(self, trunk: dict, prompt: list[int]):
        """Feed ``prompt`` after the longest prefix the trunk shares with it; the trunk then holds the prompt.
        Returns the logits of its next token."""
        from transformers import DynamicCache

        torch = self.torch
        keep = min(common_prefix(trunk["held"], prompt), len(prompt) - 1) if trunk["layers"] else 0
        data = [(None, None) if kv is None else (kv[0][..., :keep, :], kv[1][..., :keep, :]) for kv in trunk["layers"]]
        cache = DynamicCache(data) if keep else DynamicCache()
        ids = torch.tensor([prompt[keep:]], device=self.device)
        positions = torch.arange(keep, len(prompt), device=self.device).unsqueeze(0)
        attention = torch.ones(1, len(prompt), dtype=torch.long, device=self.device)
        logits = self._forward(ids, cache, attention, positions)
        self.stats["prompt_tokens"] += len(prompt)
        self.stats["reused_tokens"] += keep
        self.stats["trunk_dropped"] += max(0, len(trunk["held"]) - keep)  # the trunk's tokens this prompt lacks
        trunk["layers"], trunk["held"] = self._layers(cache), list(prompt)  # new tensors: queued slices stay valid
        return logits[0]

    # --- the batch: turns decoded together, refilled as they finish ---

    def _stack(self, parts: list[tuple[Any, Any, int]], room: int):
        """One cache for a batch whose rows' caches are ``parts`` (per layer (keys, values) of shape [heads, length,
        dim] or None, the row's length): each row right-aligned behind left padding, with ``room`` free places.
        Returns the cache, the attention mask and each row's first column."""
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        torch = self.torch
        longest = max(n for _, _, n in parts)
        cache, layers = DynamicCache(), list[Any]()
        for j in range(len(parts[0][0])):
            if any(p[0][j] is None for p in parts):
                layers.append(DynamicLayer())
                continue
            k0 = parts[0][0][j]
            keys = k0.new_zeros(len(parts), k0.shape[0], longest + room, k0.shape[2])
            values = k0.new_zeros(len(parts), parts[0][1][j].shape[0], longest + room, parts[0][1][j].shape[2])
            for row, (ks, vs, n) in enumerate(parts):
                keys[row, :, longest - n:longest, :] = ks[j]
                values[row, :, longest - n:longest, :] = vs[j]
            window = self.windows.get(j)
            layers.append(self.sliding_layer(keys, values, longest, window) if window else
                          self.buffer_layer(keys, values, longest))
        cache.layers = layers
        attention = torch.zeros(len(parts), longest, dtype=torch.long, device=self.device)
        starts = [longest - n for _, _, n in parts]
        for row, start in enumerate(starts):
            attention[row, start:] = 1
        return cache, attention, starts

    def _restack(self, rows: list[_Row], cache, new: list[_Row]):
        """The batch's cache rebuilt with ``new`` rows beside the running ones (their keys taken from the buffers)."""
        parts = []
        buffers = [layer if hasattr(layer, "kbuf") else None for layer in (cache.layers if rows else [])]
        filled = next((layer.n for layer in buffers if layer is not None), 0)
        for row in rows:
            ks = [None if layer is None else layer.kbuf[row.index, :, row.start:filled, :] for layer in buffers]
            vs = [None if layer is None else layer.vbuf[row.index, :, row.start:filled, :] for layer in buffers]
            parts.append((ks, vs, filled - row.start))
        for row in new:
            ks = [None if kv is None else kv[0][0, :, :row.turn.length, :] for kv in row.turn.layers]
            vs = [None if kv is None else kv[1][0, :, :row.turn.length, :] for kv in row.turn.layers]
            parts.append((ks, vs, row.turn.length))
        room = max(r.turn.limit - len(r.out) for r in [*rows, *new]) + 1
        cache, attention, starts = self._stack(parts, room)
        for index, (row, start) in enumerate(zip([*rows, *new], starts, strict=True)):
            row.index, row.start = index, start
        return cache, attention

    def _done(self, tokens: list[int], limit: int) -> bool:
        return tokens[-1] in self.stop_ids or len(tokens) >= limit

    def _finish(self, row: _Row, out: list[list[list[int]]]) -> None:
        out[row.turn.session][row.turn.turn] = row.out
        self.stats["generated_tokens"] += len(row.out)
        self.stats["turns"] += 1
        if self.on_turn is not None:
            self.on_turn(self.stats["turns"])

    # --- sessions ---

    def _ready(self, prompts: list[list[list[int]]], limits: list[list[int]]):
        """Each turn ready to decode, in session order: its session's trunk read up to its prompt."""
        for s, turns in enumerate(prompts):
            trunk: dict = {"held": [], "layers": []}
            for k, prompt in enumerate(turns):
                logits = self._read(trunk, prompt)
                yield _Turn(s, k, trunk["layers"], len(prompt), int(logits.argmax()), max(1, limits[s][k]))

    def run(self, prompts: list[list[list[int]]], limits: list[list[int]], stop_ids: set[int],
            on_turn=None) -> list[list[list[int]]]:
        """The generated ids of every turn of every session (``limits``: each turn's most new tokens), each up to and
        including its first token of ``stop_ids``; ``on_turn(turns done)`` after each turn."""
        torch = self.torch
        self.stop_ids, self.on_turn = set(stop_ids), on_turn
        self.stats = dict.fromkeys(self.stats, 0)
        out: list[list[list[int]]] = [[[] for _ in turns] for turns in prompts]
        source = self._ready(prompts, limits)
        rows: list[_Row] = []
        cache: Any = None
        attention: Any = None
        exhausted = False
        while True:
            if not exhausted and len(rows) <= self.lanes - max(1, self.lanes // 4):  # a quarter free: refill
                new: list[_Row] = []
                while len(rows) + len(new) < self.lanes:
                    turn = next(source, None)
                    if turn is None:
                        exhausted = True
                        break
                    row = _Row(turn, [turn.first])
                    if self._done(row.out, turn.limit):
                        self._finish(row, out)
                    else:
                        new.append(row)
                if new:
                    cache, attention = self._restack(rows, cache, new)
                    rows = rows + new
            if not rows:
                if exhausted:
                    return out
                continue
            ids = torch.tensor([[r.out[-1]] for r in rows], device=self.device)
            positions = torch.tensor([[r.turn.length + len(r.out) - 1] for r in rows], device=self.device)
            attention = torch.cat([attention, torch.ones(len(rows), 1, dtype=attention.dtype, device=self.device)], 1)
            logits = self._forward(ids, cache, attention, positions)
            for index, row in enumerate(rows):
                row.out.append(int(logits[index].argmax()))
            keep = [i for i, r in enumerate(rows) if not self._done(r.out, r.turn.limit)]
            if len(keep) < len(rows):
                for i, row in enumerate(rows):
                    if i not in set(keep):
                        self._finish(row, out)
                rows = [rows[i] for i in keep]
                if rows:
                    index = torch.tensor(keep, device=self.device)
                    cache.batch_select_indices(index)
                    attention = attention[index]
                    for i, row in enumerate(rows):
                        row.index = i
