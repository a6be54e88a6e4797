"""``python -m mcp_server.cli`` = ``tunepack``."""

import sys

from . import main

sys.exit(main())
