"""One exception base for every error a user can cause (papermill's
PapermillException): the CLI catches OsbenchError and prints one line."""


class OsbenchError(Exception):
    """Base of every error a user can cause; the CLI prints it as one line."""


class ConfigError(OsbenchError, ValueError):
    """A campaign parameter that cannot work; raised before anything is measured."""


class EnvironmentUnavailable(OsbenchError):
    """A kernel environment that cannot run here; the message says why and how to install it."""
