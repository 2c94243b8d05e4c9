from autopoiesis.cli import main

main()
