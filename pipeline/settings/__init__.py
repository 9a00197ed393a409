"""Settings: one validated tree, loaded from TOML plus environment overrides.

The TOML file is the site's Flux config, or a file shaped like it:

* ``[rabbit]``: every key of flux-config-rabbit(5), same meaning and default;
* ``[cray-slingshot]``: the keys of the cray-slingshot jobtap plugin;
* ``[resource]``: Flux's own table (``config``, ``exclude``), read by dws2jgf;
* ``[pipeline]``: ours (broker, Redis prefix, Kubernetes access, queue names).

Other Flux tables (``[job-manager]``, ``[sched-fluxion-resource]``, …) are
accepted and ignored so a site can point us at its existing config.

Environment overrides: ``CORAL2_PIPELINE_<TABLE>__<KEY>`` (upper case, ``-``
and ``.`` as ``_``, ``__`` between nesting levels), e.g.
``CORAL2_PIPELINE_RABBIT__TC_TIMEOUT=5`` or
``CORAL2_PIPELINE_CRAY_SLINGSHOT__VNI_POOL=2000-3000``. Values are read as
TOML values when they parse as one (``true``, ``5``, ``["a"]``), else as
strings. The file comes from ``--config FILE`` or ``CORAL2_PIPELINE_CONFIG``.

Unknown keys and wrong types are errors that name every offending key at once.
Durations are seconds.
"""

from pipeline.settings.hwcoll import HwcollSettings
from pipeline.settings.loading import load_settings
from pipeline.settings.pipeline_table import Limits, PipelineSettings, QueueNames
from pipeline.settings.tables import (
    CONFIG_ENV,
    ENV_PREFIX,
    FLUX_TABLES_IGNORED,
    Maximums,
    Policy,
    RabbitSettings,
    ResourceTable,
    Settings,
    SlingshotSettings,
    parse_fsd,
)

__all__ = [
    "CONFIG_ENV",
    "ENV_PREFIX",
    "FLUX_TABLES_IGNORED",
    "HwcollSettings",
    "Limits",
    "Maximums",
    "PipelineSettings",
    "Policy",
    "QueueNames",
    "RabbitSettings",
    "ResourceTable",
    "Settings",
    "SlingshotSettings",
    "load_settings",
    "parse_fsd",
]
