import sys

from er_evaluation.cli import main

sys.exit(main())
