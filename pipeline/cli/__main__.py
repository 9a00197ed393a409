"""``python -m pipeline.cli``: same as the ``coral2-pipeline`` command."""

import sys

from pipeline.cli import main

sys.exit(main())
