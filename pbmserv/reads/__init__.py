"""Read models: lists that mail, the digest and the web pages all show, each made in
one place from the database (and the service's answers, such as a clock's deadline),
so that every reader sees the same list.  Nothing here changes anything.
"""
