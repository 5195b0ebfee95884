from subrosa.cli import main

main()
