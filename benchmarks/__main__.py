"""``python -m benchmarks``: run every workload and print the table (see ``benchmarks/run.py``)."""

import sys

from benchmarks.run import main

sys.exit(main())
