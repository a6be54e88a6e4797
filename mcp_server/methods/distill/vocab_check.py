"""Do a teacher and a student read the same text as the same token ids? (standard library only)

Logit distillation compares the two models' next-token distributions id by id, so the ids must mean
the same thing: the same vocabulary, the same special tokens, the same splitting of the run's own
rendered rows. The models' output widths may still differ (Qwen2.5-0.5B has 151,936 rows, 7B
152,064, for one tokenizer): the rows past the tokenizer's length are padding, and the loss compares
the logits of the tokenizer's ids only. The host runs this check before a job starts when both
tokenizers are at hand; the distillation script (which embeds this file) runs it again on the job's
machine before loading any weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


class VocabMismatch(Exception):
    """Teacher and student tokenize differently; ``problem`` and ``fix`` say how and what to do."""

    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


VOCAB_FIX = ("distil from a teacher of the student's own family that shares its tokenizer (e.g. Qwen3-4B for "
             "Qwen3-0.6B, a larger Gemma 4 for Gemma 4 E2B), or train the student with training.method: sft on the "
             "teacher's outputs instead (sequence-level distillation needs no shared vocabulary).")


def compare_vocabularies(student: dict[str, int], teacher: dict[str, int]) -> dict:
    """Counts of how two token -> id maps differ; raises VocabMismatch when they are not the same map."""
    only_student = [t for t in student if t not in teacher]
    only_teacher = [t for t in teacher if t not in student]
    moved = [t for t, i in student.items() if t in teacher and teacher[t] != i]
    if only_student or only_teacher or moved:
        example = (f"'{moved[0]}' is id {student[moved[0]]} for the student and {teacher[moved[0]]} for the teacher"
                   if moved else f"'{(only_student or only_teacher)[0]}' exists for one of them only")
        raise VocabMismatch(
            f"The teacher's vocabulary is not the student's: {len(student)} vs {len(teacher)} tokens, "
            f"{len(only_student)} only the student's, {len(only_teacher)} only the teacher's, {len(moved)} with "
            f"another id ({example}). Logit distillation compares the two distributions id by id.", VOCAB_FIX)
    return {"tokens": len(student)}


def compare_encodings(texts: Sequence[str], student: Callable[[str], list[int]],
                      teacher: Callable[[str], list[int]], show: Callable[[int], str] = str) -> dict:
    """Encode every rendered row with both tokenizers; raises VocabMismatch at the first row whose ids differ."""
    tokens = 0
    for index, text in enumerate(texts):
        a, b = student(text), teacher(text)
        if a != b:
            at = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            left = f"{show(a[at])} (id {a[at]})" if at < len(a) else "the end"
            right = f"{show(b[at])} (id {b[at]})" if at < len(b) else "the end"
            raise VocabMismatch(
                f"The teacher's tokenizer splits the run's rendered rows differently: row {index} is {len(a)} "
                f"tokens for the student and {len(b)} for the teacher; at token {at} the student has {left}, the "
                f"teacher {right}.", VOCAB_FIX)
        tokens += len(a)
    return {"rows": len(texts), "tokens": tokens}


def output_widths(vocab: int, student_width: int, teacher_width: int) -> dict:
    """The logits both models are compared on: the tokenizer's ``vocab`` ids. Wider output layers are padding
    (sliced off); a narrower one cannot score every id the tokenizer can produce (refused)."""
    for who, width in (("student", student_width), ("teacher", teacher_width)):
        if width < vocab:
            raise VocabMismatch(
                f"The {who}'s output layer has {width} rows but its tokenizer has {vocab} ids, so the {who} cannot "
                "score every token the rows hold.", VOCAB_FIX)
    return {"compared": vocab, "student_width": student_width, "teacher_width": teacher_width,
            "sliced": student_width != vocab or teacher_width != vocab}
