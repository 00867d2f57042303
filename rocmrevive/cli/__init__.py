"""The command line: parse options, call one core function, render. No logic lives here."""
