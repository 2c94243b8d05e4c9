"""python -m autopoiesis: the same as the autopoiesis command."""

from autopoiesis.cli import main

main()
