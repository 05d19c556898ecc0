"""What a notebook calls first so that the package's figures show.

The package draws figures without pyplot (``matplotlib.figure.Figure``: no
global state, safe in workers and scripts), and it is importing pyplot under
IPython that registers the formatter turning a Figure into an image.  Without
it, ``display(fig)`` prints ``<Figure size 650x4594 with 1 Axes>`` and nothing
else.  ``show_figures()`` turns the inline backend on explicitly.
"""
from __future__ import annotations


def show_figures() -> bool:
    """Display figures inline in this IPython kernel (JupyterLab, papermill); False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.run_line_magic("matplotlib", "inline")
    return True
