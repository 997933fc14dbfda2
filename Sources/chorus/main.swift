import ChorusCommandLine

ChorusCommandLine.main()
