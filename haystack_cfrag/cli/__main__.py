"""`python -m haystack_cfrag.cli …` runs `cfrag …`."""

import sys

from haystack_cfrag.cli import main

sys.exit(main())
