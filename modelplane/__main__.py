"""`python -m modelplane`: the `modelplane` command, for processes started without it on PATH."""

from modelplane.cli.main import main

main()
