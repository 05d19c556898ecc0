"""One exception base for every error a user can cause (papermill's
PapermillException): the CLI catches OsbenchError and prints one line; in a
notebook it shows as that one line too."""


class OsbenchError(Exception):
    """Base of every error a user can cause; the CLI prints it as one line, and so does
    a notebook (IPython shows ``_render_traceback_`` instead of the traceback: the
    message already says what was wrong and what to do, the stack adds nothing)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class ConfigError(OsbenchError, ValueError):
    """A campaign parameter that cannot work; raised before anything is measured."""


class EnvironmentUnavailable(OsbenchError):
    """A kernel environment that cannot run here; the message says why and how to install it."""
