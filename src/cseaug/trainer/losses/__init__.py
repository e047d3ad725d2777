"""The papers' losses that sentence-transformers does not have, as sentence-transformers losses.

Each takes the model and the columns of one training set (``sentence_features``, in the
order :mod:`cseaug.trainer.objectives` builds them) and returns the mean loss of the batch.
The others (unsupervised and supervised SimCSE, NGCSE's contrastive term on the NLI
pattern, Generate-CSE's anchor-side NT-Xent) are sentence-transformers'
``MultipleNegativesRankingLoss``.
Modules import torch when they are imported: import them where a model is trained.

* :mod:`.ngcse`: contrastive loss + hierarchical triplet loss (NGCSE eq. 1, 6, 7);
* :mod:`.osscse`: dropout InfoNCE + recall loss + two-way margin loss (OssCSE eq. 2-5);
* :mod:`.skicse`: SimCSE's loss weighted against the knowable-information terms (SKICSE eq. 1-7);
* :mod:`.nt_xent`: Generate-CSE's NT-Xent over 2N sentences, both sides (VAEGPT-Sim 3.2).
"""
