"""Code the TFRecord tutorial notebooks have shown, kept for reuse (imports no TensorFlow).

One module per topic; each module's docstring says what it holds and which notebooks show it
(the API reference tabulates them). ``python -m helpers`` is the command line.
"""

__version__ = "0.1.0"
