"""`python -m haystack_cfrag.cli …` runs `cfrag …`."""

import sys

from haystack_cfrag.cli import main
from haystack_cfrag.common.interrupts import clear_stale_interrupt_flag

try:
    sys.exit(main())
finally:
    clear_stale_interrupt_flag()  # else CPython may turn exit 130 after a Ctrl-C into death by SIGINT
