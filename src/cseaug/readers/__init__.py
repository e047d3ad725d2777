"""Every reader of input files: corpora (plain text, or columns) and benchmark files.

Readers turn files into Arrow tables or batches and check what they can before any work;
they know nothing of cleaning, sampling or datasets.
"""
