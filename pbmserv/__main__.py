from pbmserv.worker import become_child

become_child()  # a process started by 'pbmserv serve': niced, ends with it

from pbmserv.cli import main  # noqa: E402

main()
