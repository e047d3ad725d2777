"""The papers' losses that sentence-transformers does not have, as sentence-transformers losses.

Each takes the columns of one training set in the order :mod:`cseaug.trainer.objectives`
builds them and returns the batch's mean loss; the others are sentence-transformers'
``MultipleNegativesRankingLoss``. The modules import torch: import them where a model trains.
"""
