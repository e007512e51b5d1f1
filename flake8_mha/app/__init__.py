"""What every entry point shares, never an entry point itself: the lint pipeline and
its results cache, configuration and options, file discovery, fixes, notebooks,
report formats and the rule pages."""
