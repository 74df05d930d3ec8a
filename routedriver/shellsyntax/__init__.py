"""Bash syntax, read in one place: ``lexer`` (tokens with their spans and contexts), ``words`` (the words and
simple commands the tokens make) and ``braces`` (brace expansion of a word).

The route driver's ``$route`` substitution (``route.subst``), ``route.lint`` and bhrain's permission reader
(``brain.permissions.shell``, which adds what runs behind wrappers) all read commands through it. Nothing is
imported here, so importing one module costs only that module.
"""
