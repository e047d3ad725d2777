"""The build layer: how a run config becomes a published dataset version.

A build is one list of steps run by one loop (:mod:`cseaug.step`): the method's stage, the
row filters the config asks for, and the MER step. :class:`~cseaug.pipeline.run.BuildRun`
owns every step's resources and closes them; plan, shard and publish are the three calls
the Prefect tasks wrap. Nothing here imports Prefect.
"""
