"""The one exception type that means "the user gave bad input" (exit status 2)."""


class UdsInputError(Exception):
    """Bad input from the user: a wrong path, an unknown alias, mismatched models, bad data.

    The command line prints its message on one line and exits with status 2.
    """
