"""The batch check: the tokens the trainer trains are the tokens the mask check verified.

The mask check (``maskcheck.py``) renders rows itself and proves their masks token by token. What trains is
something else: TRL's own tokenized rows (``trainer.train_dataset``: ``input_ids`` and ``labels``, packed rows
with ``seq_lengths``) collated into batches (padded rows with an attention mask, or padding-free packed rows
whose ``position_ids`` restart at each sequence). This module closes the chain on what the trainer will see:

- every sequence of the first collated batches is found among TRL's tokenized rows and must carry exactly that
  row's labels (a packed sequence also loses its first label: TRL's collator cuts the loss across the boundary);
- every row the mask check verified is found among TRL's rows and TRL's labels must be the verified mask.

It fails loudly when it verified nothing: a sampled batch in which no sequence could be matched is a failure,
not a pass (a check that compares against rows it never sees proves nothing).

    wanted = batch_sequences(batches) ...   # in the training script, from trainer.get_train_dataloader()
    report = check_batches(batches, trl_rows, checked)   # problems in report["problems"]

Like ``maskcheck.py`` this module is embedded verbatim in the training script (standard library only): batches
come in as plain lists (``tensor.tolist()``), TRL's rows as an iterable of dicts.
"""

IGNORE = -100


def batch_sequences(batch: dict) -> list[tuple[list, list, bool]]:
    """(token ids, labels, packed?) of each sequence in one collated batch of plain lists: padded rows are cut at
    their attention mask, padding-free rows are split where ``position_ids`` restart at 0."""
    out: list[tuple[list, list, bool]] = []
    rows, labels = batch["input_ids"], batch["labels"]
    masks, positions = batch.get("attention_mask"), batch.get("position_ids")
    for r, (ids, labs) in enumerate(zip(rows, labels, strict=True)):
        if masks is not None:  # padded: the row, then padding to the right
            n = sum(1 for m in masks[r] if m)
            out.append((list(ids[:n]), list(labs[:n]), False))
            continue
        pos = positions[r] if positions is not None else list(range(len(ids)))
        starts = [i for i, p in enumerate(pos) if p == 0] + [len(ids)]
        for start, end in zip(starts, starts[1:], strict=False):
            if end - start > 1 or labs[start] != IGNORE:  # a lone untrained position 0 is padding to a multiple
                out.append((list(ids[start:end]), list(labs[start:end]), True))
    return out


def trl_sequences(rows, wanted_lengths: set | None = None):
    """(token ids, labels) of each sequence in TRL's prepared rows; a packed row (``seq_lengths``) gives one per
    packed sequence. ``wanted_lengths`` skips sequences of other lengths without building them."""
    for row in rows:
        ids, labels = row["input_ids"], row["labels"]
        lengths = row.get("seq_lengths") or [len(ids)]
        start = 0
        for length in lengths:
            if wanted_lengths is None or length in wanted_lengths:
                yield list(ids[start:start + length]), list(labels[start:start + length])
            start += length


def labels_of(ids: list, mask: list) -> list:
    """The labels a verified 0/1 mask gives: the token where trained, -100 elsewhere."""
    return [t if m else IGNORE for t, m in zip(ids, mask, strict=True)]


def check_batches(batches: list, trl_rows, checked: dict) -> dict:
    """Compare the collated ``batches`` (dicts of plain lists) with TRL's tokenized rows, and TRL's rows with the mask
    check's verified rows (``checked``: {tuple of token ids: 0/1 mask}). The report counts sequences verified,
    mismatched and not found per batch, and the checked rows TRL holds; ``problems`` is empty when all is well."""
    sequences = [batch_sequences(b) for b in batches]
    wanted = {tuple(ids) for seqs in sequences for ids, _, _ in seqs} | set(checked)
    found: dict[tuple, list] = {}
    for ids, labels in trl_sequences(trl_rows, {len(k) for k in wanted}):
        key = tuple(ids)
        if key in wanted and key not in found:
            found[key] = labels
            if len(found) == len(wanted):
                break
    report: dict = {"batches": len(batches), "sequences": 0, "sequences_verified": 0, "sequences_mismatched": 0,
                    "sequences_not_in_dataset": 0, "verified_per_batch": [], "checked_rows": len(checked),
                    "checked_rows_in_dataset": 0, "checked_rows_mismatched": 0, "problems": []}
    for index, seqs in enumerate(sequences):
        verified = 0
        for ids, labels, packed in seqs:
            report["sequences"] += 1
            want = found.get(tuple(ids))
            if want is None:
                report["sequences_not_in_dataset"] += 1
                continue
            want = [IGNORE, *want[1:]] if packed else want
            if labels == want:
                verified += 1
            else:
                report["sequences_mismatched"] += 1
                at = next(i for i, (a, b) in enumerate(zip(labels, want, strict=True)) if a != b)
                report["problems"].append(f"batch {index}: a sequence of {len(ids)} tokens is collated with other "
                                          f"labels than TRL's row (first at token {at})")
        report["sequences_verified"] += verified
        report["verified_per_batch"].append(verified)
        if not verified:
            report["problems"].append(f"batch {index}: none of its {len(seqs)} sequences was found among TRL's "
                                      "tokenized rows, so nothing in it was verified")
    for ids, mask in checked.items():
        labels = found.get(ids)
        if labels is None:
            continue  # truncated or dropped by TRL: the mask check's truncation count says so
        report["checked_rows_in_dataset"] += 1
        if labels != labels_of(list(ids), mask):
            report["checked_rows_mismatched"] += 1
            report["problems"].append(f"a row the mask check verified ({len(ids)} tokens) has other labels in TRL's "
                                      "tokenized data")
    if checked and not report["checked_rows_in_dataset"]:
        report["problems"].append(f"none of the {len(checked)} rows the mask check verified is among TRL's tokenized "
                                  "rows")
    report["problems"] = report["problems"][:20]
    return report


def batch_line(report: dict) -> str:
    """``batches: 4 sampled, 12/12 sequences match TRL's rows (3, 3, 3, 3 per batch); 32/32 checked rows …``."""
    per = ", ".join(map(str, report["verified_per_batch"]))
    return (f"batches: {report['batches']} sampled, {report['sequences_verified']}/{report['sequences']} sequences "
            f"carry TRL's labels ({per} per batch), {report['sequences_mismatched']} mismatched, "
            f"{report['sequences_not_in_dataset']} not found; {report['checked_rows_in_dataset']}/"
            f"{report['checked_rows']} mask-checked rows in TRL's data, {report['checked_rows_mismatched']} "
            "with other labels")
