"""Every reader of input files: corpora (one module per format) and benchmark files.

Readers turn files into Arrow tables or batches and check what they can before any work;
they know nothing of cleaning, sampling or datasets.
"""
