"""The ``hydra/launcher=local`` plugin class: Hydra's joblib launcher, with gpureplay's sweep rules.

Hydra imports every module of the ``hydra_plugins`` namespace on each start, so
this one stays a shim: the work is in :mod:`gpureplay.launcher`, imported when
a sweep launches.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra.core.utils import JobReturn
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher


class GpureplayJoblibLauncher(JoblibLauncher):  # type: ignore[misc]
    """Joblib launcher that checks every point first, locks the sweep folder and survives killed workers."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        """Run the points; one :class:`JobReturn` per point, in the order given."""
        from gpureplay.launcher import launch

        return launch(self, job_overrides, initial_job_idx)
