"""Training: the generic loop, checkpoints, metrics log, progress, processes;
and the experiment builders every paper shares (language models, fixed
arrays). Nothing here is named for a paper (see :mod:`vcrnn_jax.papers`)."""

from vcrnn_jax.training.checkpoint import Checkpointer
from vcrnn_jax.training.metric_writer import MetricsWriter, read_metrics
from vcrnn_jax.training.progress import Progress, summary_table
from vcrnn_jax.training.train import (
           Experiment,
           StepInfo,
           TrainConfig,
           TrainingDiverged,
           TrainResult,
           TrainState,
           train_and_evaluate,
)

__all__ = ['Checkpointer', 'Experiment', 'MetricsWriter', 'Progress',
           'StepInfo', 'TrainConfig', 'TrainResult', 'TrainState',
           'TrainingDiverged', 'read_metrics', 'summary_table',
           'train_and_evaluate']
