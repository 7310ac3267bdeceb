#!/usr/bin/env python
"""Django's command-line utility; `jezero` (jezero_site.cli) is the friendlier front door."""
import sys

from jezero_site.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="manage.py"))
