"""Small tools every layer uses: running external programs, atomic JSON records, how a step script reports."""
