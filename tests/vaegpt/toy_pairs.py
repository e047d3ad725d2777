"""Toy training pairs of the VAEGPT-Sim tests."""

from __future__ import annotations

TOY_PAIRS = [
    ("A man is playing a guitar", "A man plays the guitar"),
    ("A dog runs on the grass", "A dog is running through the grass"),
    ("Two kids are swimming", "Two children swim in a pool"),
    ("A woman is slicing an onion", "A woman cuts an onion"),
    ("The cat sleeps on the sofa", "A cat is sleeping on a couch"),
    ("A boy rides a bike", "A child is riding a bicycle"),
    ("People walk in the park", "Some people are walking in a park"),
    ("A chef cooks pasta", "A cook is making pasta"),
]
"""A toy pair set (SICK-like paraphrases)."""
