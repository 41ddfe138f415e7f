from pbmserv.cli import main

main()
