from gpureplay.cli import main

main()
