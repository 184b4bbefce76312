from routequote.cli import main

main()
