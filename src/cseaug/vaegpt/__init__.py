"""VAEGPT-Sim synonym generator (Wang et al., "Improving Sentence Representation with Limited
Corpus Using Gradually-Denoising VAE", section 3.1; docs/vaegpt.md).

Only :mod:`.data` and :mod:`.config` import without the ``hf`` extra; nothing is imported
here so that ``import cseaug`` stays light.
"""
