"""The checks of the chapters' exercises: a learner's function against the book's reference.

- :mod:`~lib.exercises.framework`: ``compare``, ``same``, ``passing_or_reference`` and ``CheckFailed``.
- :mod:`~lib.exercises.ocr_checks`: Part I's exercises (chapters 1-4).
- :mod:`~lib.exercises.induction_checks`: Part II's exercises (chapters 5-8).

Every check is tested against a stub, plausible wrong answers and the reference (``tests/exercises``).
"""
